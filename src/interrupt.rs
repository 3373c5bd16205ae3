//! Ctrl-C for commands that commit their work item by item (fold): the first SIGINT asks the
//! command to take no new item and finish those in progress, so that everything committed stands
//! and is reported; a second one exits at once with status 130, as a shell expects of an
//! interrupted program. Either way nothing committed is undone: every commit is atomic, and what
//! an unfinished item wrote is unreferenced, which gc removes.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use signal_hook::consts::SIGINT;
use signal_hook::iterator::Signals;

use crate::error::{Error, Result, Status};

/// Whether Ctrl-C was pressed since [`Interrupt::watch`].
#[derive(Clone)]
pub struct Interrupt {
    requested: Arc<AtomicBool>,
}

impl Interrupt {
    /// Watch for Ctrl-C from now on; `say` is the line printed on stderr at the first one.
    pub fn watch(say: String) -> Result<Self> {
        let requested = Arc::new(AtomicBool::new(false));
        let mut signals =
            Signals::new([SIGINT]).map_err(|e| Error::system("watch for Ctrl-C", e))?;
        let flag = Arc::clone(&requested);
        std::thread::spawn(move || {
            for _ in signals.forever() {
                if flag.swap(true, Ordering::SeqCst) {
                    std::process::exit(Status::Interrupted.code().into());
                }
                eprintln!("{say}");
            }
        });
        Ok(Self { requested })
    }

    pub fn requested(&self) -> bool {
        self.requested.load(Ordering::SeqCst)
    }
}
