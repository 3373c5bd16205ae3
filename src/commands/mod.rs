//! One module per command, each a clap definition plus `run`. The registry below is the single list
//! that the dispatcher, `ctxfold help -a`, the man pages and the completions are built from.

pub mod cat_manifest;
pub mod cat_object;
pub mod hash_object;
pub mod restore;
pub mod split;
pub mod train_dict;
pub mod write_manifest;

use crate::cli::{Level, Spec};
use crate::segment::Settings;

/// Every command, plumbing first, in the order `help -a` lists them.
pub fn registry() -> Vec<Spec> {
    vec![
        Spec::of::<hash_object::HashObjectArgs>(Level::Plumbing),
        Spec::of::<cat_object::CatObjectArgs>(Level::Plumbing),
        Spec::of::<split::SplitArgs>(Level::Plumbing),
        Spec::of::<write_manifest::WriteManifestArgs>(Level::Plumbing),
        Spec::of::<cat_manifest::CatManifestArgs>(Level::Plumbing),
        Spec::of::<train_dict::TrainDictArgs>(Level::Plumbing),
        Spec::of::<restore::RestoreArgs>(Level::Porcelain),
    ]
}

/// The segmentation settings as flags (defaults: the contract's).
#[derive(Debug, Clone, clap::Args)]
pub struct SettingsArgs {
    /// String values whose raw token is at least this many bytes become field parts
    #[arg(long, value_name = "BYTES", default_value_t = Settings::default().field_threshold)]
    pub field_threshold: u64,
    /// Lines longer than this (with their newline) are not parsed, only chunked
    #[arg(long, value_name = "BYTES", default_value_t = Settings::default().max_json_line_bytes)]
    pub max_json_line_bytes: u64,
    /// FastCDC minimum chunk size for the bytes between fields
    #[arg(long, value_name = "BYTES", default_value_t = Settings::default().cdc_min_bytes)]
    pub cdc_min_bytes: u64,
    /// FastCDC average chunk size
    #[arg(long, value_name = "BYTES", default_value_t = Settings::default().cdc_average_bytes)]
    pub cdc_average_bytes: u64,
    /// FastCDC maximum chunk size
    #[arg(long, value_name = "BYTES", default_value_t = Settings::default().cdc_max_bytes)]
    pub cdc_max_bytes: u64,
}

impl SettingsArgs {
    pub fn settings(&self) -> crate::error::Result<Settings> {
        let settings = Settings {
            field_threshold: self.field_threshold,
            max_json_line_bytes: self.max_json_line_bytes,
            cdc_min_bytes: self.cdc_min_bytes,
            cdc_average_bytes: self.cdc_average_bytes,
            cdc_max_bytes: self.cdc_max_bytes,
            compression: "zstd".into(),
            dictionary: None,
        };
        settings.check_writable()?;
        Ok(settings)
    }
}

/// `--level N`: the zstd level new objects are written at.
#[derive(Debug, Clone, clap::Args)]
pub struct LevelArgs {
    /// zstd level for new objects
    #[arg(long, value_name = "N", default_value_t = crate::store::objects::DEFAULT_LEVEL, allow_negative_numbers = true)]
    pub level: i32,
}
