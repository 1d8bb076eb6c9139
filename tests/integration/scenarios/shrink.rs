//! Seeds and shrinking: a small generator of numbers of our own (so that a
//! seed means the same sequence on every machine and every release of any
//! crate), and the greedy shrink that takes a failing sequence down to one
//! where no single step can be removed without the failure going away.

/// splitmix64: one 64-bit state, good enough to draw steps from.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The shortest sequence found that still fails: whole runs of steps are
/// tried away first (halves, quarters…), then one step at a time, until
/// no removal keeps the failure. `fails` plays a sequence and says whether
/// it failed; `budget` bounds how many plays shrinking may take.
pub fn shrink<T: Clone>(
    failing: Vec<T>,
    mut budget: usize,
    mut fails: impl FnMut(&[T]) -> bool,
) -> Vec<T> {
    let mut best = failing;
    let mut chunk = best.len() / 2;
    while chunk >= 1 && budget > 0 {
        let mut start = 0;
        let mut removed_any = false;
        while start < best.len() && budget > 0 {
            let end = (start + chunk).min(best.len());
            let mut candidate = best[..start].to_vec();
            candidate.extend_from_slice(&best[end..]);
            budget -= 1;
            if !candidate.is_empty() && fails(&candidate) {
                best = candidate;
                removed_any = true;
            } else {
                start += chunk;
            }
        }
        if !removed_any {
            chunk /= 2;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shrinking_keeps_only_the_steps_the_failure_needs() {
        let steps: Vec<u32> = (0..40).collect();
        let shortest = shrink(steps, 500, |s| s.contains(&7) && s.contains(&31));
        assert_eq!(shortest, vec![7, 31]);
    }

    #[test]
    fn a_seed_draws_the_same_numbers_every_time() {
        let draw = |seed| {
            let mut rng = Rng::new(seed);
            (0..5).map(|_| rng.below(1000)).collect::<Vec<_>>()
        };
        assert_eq!(draw(42), draw(42));
        assert_ne!(draw(42), draw(43));
    }
}
