//! One piece of work split over two threads: what produces runs on a thread of its own, and what
//! takes its output runs on the caller's, in order, as it comes. Used where a core would otherwise
//! idle (a long session folded last), never to make work that is not there.

use crossbeam_channel::{Receiver, Sender, bounded};

use crate::error::{Error, Result};

/// What a producer hands its output to.
pub struct Feed<T>(Sender<T>);

impl<T> Feed<T> {
    /// Hand `item` on; an error once the taker stopped (on an error of its own, which
    /// [`split`] reports in this one's place).
    pub fn send(&self, item: T) -> Result<()> {
        (self.0.send(item)).map_err(|_| Error::corrupt("the taker stopped"))
    }
}

/// Run `produce` on a thread of its own, handing each item it feeds to `take` here; at most
/// `ahead` items wait between the two. The first error wins: `take`'s stops `produce` at its next
/// item, and `produce`'s ends the taking.
pub fn split<T: Send, R: Send>(
    ahead: usize,
    produce: impl FnOnce(&Feed<T>) -> Result<R> + Send,
    mut take: impl FnMut(T) -> Result<()>,
) -> Result<R> {
    let (sender, received): (Sender<T>, Receiver<T>) = bounded(ahead);
    let (produced, taken) = std::thread::scope(|scope| {
        let producing = scope.spawn(move || produce(&Feed(sender)));
        let taken = received.iter().try_for_each(&mut take);
        drop(received);
        let produced = producing.join();
        let produced = produced.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (produced, taken)
    });
    taken?;
    produced
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_taken_in_order_and_the_first_error_wins() {
        let mut taken = Vec::new();
        let produced = split(
            2,
            |feed| {
                for i in 0..100 {
                    feed.send(i)?;
                }
                Ok("done")
            },
            |i| {
                taken.push(i);
                Ok(())
            },
        );
        assert_eq!(produced.unwrap(), "done");
        assert_eq!(taken, (0..100).collect::<Vec<_>>());
        // The taker's error, not the producer's that follows from it.
        let stopped = split(
            1,
            |feed| (0..100).try_for_each(|i| feed.send(i)),
            |i| match i {
                3 => Err(Error::corrupt("the disk is full")),
                _ => Ok(()),
            },
        );
        assert_eq!(stopped.unwrap_err().to_string(), "the disk is full");
        // The producer's error ends the taking.
        let mut count = 0;
        let failed = split(
            1,
            |feed| {
                feed.send(1)?;
                Err::<(), _>(Error::corrupt("it shrank"))
            },
            |_| {
                count += 1;
                Ok(())
            },
        );
        assert_eq!(failed.unwrap_err().to_string(), "it shrank");
        assert_eq!(count, 1);
    }
}
