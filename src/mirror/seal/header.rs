//! A sealed tree's header: `recipients` in clear and `key.age`, the secret with the same recipients
//! encrypted to each of them. Opening it tells apart the two failures a person must act on
//! differently: no identity here is among the recipients (refused: get a key added, status 3), and
//! one is but `key.age` does not open or says otherwise than `recipients` (changed on the remote:
//! corrupt, status 4).

use age::x25519::{Identity, Recipient};

use super::envelope::{Unopened, decrypt, encrypt};
use super::{Keyring, canonical};
use crate::error::{Error, Result};
use crate::keys::parse_recipient;

/// The first line of `key.age`'s plain text.
const MAGIC: &str = "ctxfold sealed remote v1";

/// The header's two files: (`recipients`, `key.age`).
pub fn write(keyring: &Keyring) -> Result<(Vec<u8>, Vec<u8>)> {
    let listed = listing(&keyring.recipients);
    let hex: String = keyring.secret.iter().map(|b| format!("{b:02x}")).collect();
    let plain = format!("{MAGIC}\n{hex}\n{listed}");
    Ok((
        listed.into_bytes(),
        encrypt(&keyring.recipients, plain.as_bytes())?,
    ))
}

/// The recipients a `recipients` file names (a file that does not parse is corrupt).
pub fn recipients(listed: &[u8]) -> Result<Vec<Recipient>> {
    let text = std::str::from_utf8(listed)
        .map_err(|_| Error::corrupt("the remote's recipients file is not text"))?;
    text.lines()
        .map(|line| {
            parse_recipient(line).map_err(|_| {
                Error::corrupt(format!(
                    "the remote's recipients file names {line:?}, no recipient"
                ))
            })
        })
        .collect()
}

/// Open the header with this machine's `identities`.
pub fn open(identities: &[Identity], listed: &[u8], key: &[u8]) -> Result<Keyring> {
    let named = recipients(listed)?;
    let ours: Vec<String> = identities
        .iter()
        .map(|i| i.to_public().to_string())
        .collect();
    let changed = |why: &str| Error::corrupt(format!("the remote's {}: {why}", super::KEY));
    let plain = match decrypt(identities, key) {
        Ok(plain) => plain,
        Err(Unopened::NotForUs) if !named.iter().any(|r| ours.contains(&r.to_string())) => {
            return Err(Error::refused(format!(
                "the remote is encrypted to {}, and this machine's identity ({}) is none of them: \
                 have one of them run `ctxfold remote recipients add REMOTE {}`, or name a key with \
                 --identity",
                listing(&named).trim_end().replace('\n', ", "),
                ours.join(", "),
                ours.first().map_or("age1…", String::as_str),
            )));
        }
        Err(Unopened::NotForUs) => return Err(changed("it fails authentication")),
        Err(Unopened::Forged(why)) => {
            return Err(changed(&format!("fails authentication ({why})")));
        }
    };
    let text = std::str::from_utf8(&plain).map_err(|_| changed("not text"))?;
    let mut lines = text.lines();
    if lines.next() != Some(MAGIC) {
        return Err(changed("not a header this ctxfold reads"));
    }
    let secret = lines
        .next()
        .and_then(unhex)
        .ok_or_else(|| changed("no secret"))?;
    let inside = canonical(
        lines
            .map(parse_recipient)
            .collect::<Result<Vec<_>>>()
            .map_err(|_| changed("a recipient that does not parse"))?,
    );
    if inside != canonical(named) {
        return Err(Error::corrupt(format!(
            "the remote's {} does not name the recipients its {} file names",
            super::RECIPIENTS,
            super::KEY
        )));
    }
    Ok(Keyring {
        secret,
        recipients: inside,
    })
}

/// Recipients one a line, in order.
fn listing(recipients: &[Recipient]) -> String {
    recipients.iter().map(|r| format!("{r}\n")).collect()
}

fn unhex(text: &str) -> Option<[u8; 32]> {
    let mut secret = [0; 32];
    if text.len() != 64 {
        return None;
    }
    for (n, byte) in secret.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * n..2 * n + 2)?, 16).ok()?;
    }
    Some(secret)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Status;

    #[test]
    fn a_header_opens_for_a_recipient_and_tells_a_stranger_from_a_change() {
        let (us, them) = (Identity::generate(), Identity::generate());
        let keyring = Keyring::new(vec![us.to_public()]).unwrap();
        let (listed, key) = write(&keyring).unwrap();
        let opened = open(std::slice::from_ref(&us), &listed, &key).unwrap();
        assert_eq!(opened.secret, keyring.secret);
        let stranger = open(&[them], &listed, &key).err().unwrap();
        assert_eq!(stranger.status(), Status::Refused);
        assert!(stranger.to_string().contains(&us.to_public().to_string()));
        for at in 0..key.len() {
            let mut changed = key.clone();
            changed[at] ^= 0x20;
            let e = open(std::slice::from_ref(&us), &listed, &changed).err();
            assert_eq!(e.map(|e| e.status()), Some(Status::Corrupt), "byte {at}");
        }
    }
}
