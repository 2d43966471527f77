//! A first-in first-out queue whose first two items are kept inline: a client stream's
//! request body DATA on its way from the connection's loop to the pipeline. Most request
//! bodies are one or two frames; in a `VecDeque` each stream paid for its first push with
//! an allocation and a grow (~200 instructions, callgrind). For small items only: an
//! upstream answer's parts (trailers are a 96-byte map) cost more in moves than the
//! allocation they save. No well-kept crate has a deque with inline room (smallvec's
//! vector shifts on every `remove(0)`), so it is these few lines.

use std::collections::VecDeque;

/// `a` is the oldest item, `b` the next, `rest` what came after; `b` is only filled while
/// `a` is, and neither while `rest` holds anything, so the order is always a, b, rest.
pub struct Inbox<T> {
    a: Option<T>,
    b: Option<T>,
    rest: VecDeque<T>,
}

impl<T> Default for Inbox<T> {
    fn default() -> Self {
        Inbox {
            a: None,
            b: None,
            rest: VecDeque::new(),
        }
    }
}

impl<T> Inbox<T> {
    pub fn push_back(&mut self, item: T) {
        if self.rest.is_empty() {
            if self.a.is_none() {
                self.a = Some(item);
                return;
            }
            if self.b.is_none() {
                self.b = Some(item);
                return;
            }
        }
        self.rest.push_back(item);
    }

    pub fn pop_front(&mut self) -> Option<T> {
        match self.a.take() {
            Some(item) => {
                self.a = self.b.take();
                Some(item)
            }
            None => self.rest.pop_front(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.a.is_none() && self.rest.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.a.iter().chain(self.b.iter()).chain(self.rest.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_come_out_in_the_order_they_went_in() {
        let mut q = Inbox::default();
        let mut model = VecDeque::new();
        let mut next = 0u32;
        // Every mix of pushes and pops, up to eight deep, against a VecDeque.
        for pattern in 0u32..1 << 12 {
            for bit in 0..12 {
                if pattern & (1 << bit) != 0 && model.len() < 8 {
                    q.push_back(next);
                    model.push_back(next);
                    next += 1;
                } else {
                    assert_eq!(q.pop_front(), model.pop_front());
                }
                assert_eq!(q.is_empty(), model.is_empty());
                assert!(q.iter().eq(model.iter()), "{pattern:b}");
            }
        }
    }
}
