//! Work spread over the machine's cores: each worker thread builds its own state once (a zstd
//! encoder, say) and takes the next item from a shared counter; results come back in input order,
//! whatever order they finished in.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `work(state, item)` for every item, on up to `available_parallelism` threads; `done` is called
/// after each item (for a progress bar).
pub fn map<T, S, R>(
    items: &[T],
    init: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, &T) -> R + Sync,
    done: impl Fn() + Sync,
) -> Vec<R>
where
    T: Sync,
    R: Send,
{
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(items.len())
        .max(1);
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut state = init();
                loop {
                    let at = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(at) else { break };
                    let result = work(&mut state, item);
                    results.lock().expect("no worker panics while holding it")[at] = Some(result);
                    done();
                }
            });
        }
    });
    results
        .into_inner()
        .expect("workers are done")
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
}
