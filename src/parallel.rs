//! Work spread over the machine's cores: each worker thread builds its own state once (a zstd
//! encoder, say) and takes the next item from a shared counter. [`stream`] hands each result back
//! to the calling thread as soon as it is done (a command prints a session's line as it commits);
//! [`map`] collects them in input order, whatever order they finished in.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

/// `work(state, item)` for every item, on up to `available_parallelism` threads, calling
/// `each(index, result)` on the calling thread as each is done. Workers take no new item once
/// `stop()` is true; those in progress finish and are handed back.
pub fn stream<T, S, R>(
    items: &[T],
    init: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, &T) -> R + Sync,
    stop: impl Fn() -> bool + Sync,
    mut each: impl FnMut(usize, R),
) where
    T: Sync,
    R: Send,
{
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(items.len())
        .max(1);
    let next = AtomicUsize::new(0);
    let (done, results) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let done = done.clone();
            let (next, init, work, stop) = (&next, &init, &work, &stop);
            scope.spawn(move || {
                let mut state = init();
                while !stop() {
                    let at = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(at) else { break };
                    if done.send((at, work(&mut state, item))).is_err() {
                        break;
                    }
                }
            });
        }
        // The workers hold the only senders left: the loop ends when the last one is done.
        drop(done);
        for (at, result) in results {
            each(at, result);
        }
    });
}

/// `work(state, item)` for every item, as [`stream`] does; `done` is called after each item (for
/// a progress bar). Results come back in input order.
pub fn map<T, S, R>(
    items: &[T],
    init: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, &T) -> R + Sync,
    done: impl Fn(),
) -> Vec<R>
where
    T: Sync,
    R: Send,
{
    let mut results: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    stream(
        items,
        init,
        work,
        || false,
        |at, result| {
            results[at] = Some(result);
            done();
        },
    );
    results
        .into_iter()
        .map(|r| r.expect("every item was worked"))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_keep_input_order() {
        let items: Vec<u64> = (0..100).collect();
        let out = super::map(
            &items,
            || 0u64,
            |seen, x| {
                *seen += 1;
                x * 2
            },
            || (),
        );
        assert_eq!(out, items.iter().map(|x| x * 2).collect::<Vec<_>>());
    }

    #[test]
    fn a_stop_leaves_the_rest_undone() {
        let items: Vec<u64> = (0..1000).collect();
        let mut seen = 0;
        super::stream(&items, || (), |(), x| *x, || true, |_, _| seen += 1);
        assert_eq!(seen, 0);
    }
}
