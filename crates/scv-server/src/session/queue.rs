//! The session's prompt queue. Ids, revisions and positions are assigned
//! here; every change needs the entry's current revision. The queue is
//! bounded by count and by the encoded size of its entries, so a
//! `queue.snapshot` always fits in one server frame.

use scv_protocol::limits::{MAX_QUEUED_BYTES, MAX_QUEUED_PROMPTS};
use scv_protocol::QueueEntry;

#[derive(Debug, Default)]
pub(super) struct PromptQueue {
    entries: Vec<Queued>,
    /// Encoded JSON bytes of all entries.
    bytes: usize,
}

/// A queued prompt and the request that submitted it (turn events of the
/// turn it becomes answer that request).
#[derive(Debug, Clone)]
pub(super) struct Queued {
    pub entry: QueueEntry,
    pub request_id: String,
    /// Its encoded size, as a snapshot would carry it.
    encoded: usize,
}

#[derive(Debug, PartialEq, Eq)]
pub(super) enum QueueError {
    NotFound,
    /// The revision was stale; holds the entry as it is now.
    Conflict(QueueEntry),
    /// The queue is at one of its bounds; says which.
    Full(String),
}

fn encoded_len(entry: &QueueEntry) -> usize {
    serde_json::to_vec(entry).map_or(usize::MAX, |v| v.len())
}

fn too_large(bytes: usize) -> QueueError {
    QueueError::Full(format!(
        "the queued prompts would take {bytes} bytes; a session queues at most {MAX_QUEUED_BYTES}: wait for some to run, or remove some"
    ))
}

impl PromptQueue {
    pub(super) fn snapshot(&self) -> Vec<QueueEntry> {
        self.entries.iter().map(|q| q.entry.clone()).collect()
    }

    /// The queued prompts, in order (what the journal keeps).
    pub(super) fn prompts(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|q| q.entry.prompt.clone())
            .collect()
    }

    pub(super) fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
    }

    /// Appends a prompt; returns the new entry and its position.
    pub(super) fn push(
        &mut self,
        prompt: String,
        submitter: &str,
        request_id: String,
    ) -> Result<(QueueEntry, usize), QueueError> {
        if self.entries.len() >= MAX_QUEUED_PROMPTS {
            return Err(QueueError::Full(format!(
                "the queue holds {MAX_QUEUED_PROMPTS} prompts, its limit: wait for one to run, or remove one"
            )));
        }
        let entry = QueueEntry {
            queue_id: uuid::Uuid::new_v4().to_string(),
            revision: 1,
            prompt,
            submitter: submitter.to_string(),
        };
        let encoded = encoded_len(&entry);
        let bytes = self.bytes.saturating_add(encoded);
        if bytes > MAX_QUEUED_BYTES {
            return Err(too_large(bytes));
        }
        self.bytes = bytes;
        self.entries.push(Queued {
            entry: entry.clone(),
            request_id,
            encoded,
        });
        Ok((entry, self.entries.len() - 1))
    }

    pub(super) fn pop_front(&mut self) -> Option<Queued> {
        if self.entries.is_empty() {
            return None;
        }
        let next = self.entries.remove(0);
        self.bytes -= next.encoded;
        Some(next)
    }

    fn find(&self, queue_id: &str, revision: u64) -> Result<usize, QueueError> {
        let index = self
            .entries
            .iter()
            .position(|q| q.entry.queue_id == queue_id)
            .ok_or(QueueError::NotFound)?;
        let current = &self.entries[index].entry;
        if current.revision != revision {
            return Err(QueueError::Conflict(current.clone()));
        }
        Ok(index)
    }

    pub(super) fn update(
        &mut self,
        queue_id: &str,
        revision: u64,
        prompt: String,
    ) -> Result<QueueEntry, QueueError> {
        let index = self.find(queue_id, revision)?;
        let mut entry = self.entries[index].entry.clone();
        entry.prompt = prompt;
        entry.revision += 1;
        let encoded = encoded_len(&entry);
        let bytes = (self.bytes - self.entries[index].encoded).saturating_add(encoded);
        if bytes > MAX_QUEUED_BYTES {
            return Err(too_large(bytes));
        }
        self.bytes = bytes;
        let queued = &mut self.entries[index];
        queued.entry = entry.clone();
        queued.encoded = encoded;
        Ok(entry)
    }

    /// Moves an entry before `before` (to the end when `None`); returns the
    /// entry and its new position.
    pub(super) fn move_entry(
        &mut self,
        queue_id: &str,
        revision: u64,
        before: Option<&str>,
    ) -> Result<(QueueEntry, usize), QueueError> {
        let index = self.find(queue_id, revision)?;
        // Where `before` stands once the moved entry is out.
        let target = |entries: &[Queued], before: &str| {
            entries.iter().position(|q| q.entry.queue_id == before)
        };
        if let Some(before) = before {
            if target(&self.entries, before).is_none() {
                return Err(QueueError::NotFound);
            }
        }
        let mut moved = self.entries.remove(index);
        moved.entry.revision += 1;
        // The revision's digits may grow by one.
        let encoded = encoded_len(&moved.entry);
        self.bytes = self.bytes - moved.encoded + encoded;
        moved.encoded = encoded;
        let position = match before {
            Some(before) if before != queue_id => {
                target(&self.entries, before).unwrap_or(self.entries.len())
            }
            Some(_) => index,
            None => self.entries.len(),
        };
        let entry = moved.entry.clone();
        self.entries.insert(position, moved);
        Ok((entry, position))
    }

    pub(super) fn remove(
        &mut self,
        queue_id: &str,
        revision: u64,
    ) -> Result<QueueEntry, QueueError> {
        let index = self.find(queue_id, revision)?;
        let removed = self.entries.remove(index);
        self.bytes -= removed.encoded;
        Ok(removed.entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(queue: &PromptQueue) -> Vec<String> {
        queue.snapshot().into_iter().map(|e| e.prompt).collect()
    }

    #[test]
    fn revisions_guard_every_change() {
        let mut queue = PromptQueue::default();
        let (a, _) = queue.push("a".into(), "you", "1".into()).unwrap();
        let (b, _) = queue.push("b".into(), "you", "2".into()).unwrap();
        let (c, pos) = queue.push("c".into(), "you", "3".into()).unwrap();
        assert_eq!(pos, 2);
        let a2 = queue.update(&a.queue_id, 1, "a2".into()).unwrap();
        assert_eq!(a2.revision, 2);
        assert_eq!(
            queue.update(&a.queue_id, 1, "x".into()),
            Err(QueueError::Conflict(a2.clone()))
        );
        let (c2, pos) = queue.move_entry(&c.queue_id, 1, Some(&a.queue_id)).unwrap();
        assert_eq!((c2.revision, pos), (2, 0));
        assert_eq!(ids(&queue), ["c", "a2", "b"]);
        let (_, pos) = queue.move_entry(&c.queue_id, 2, None).unwrap();
        assert_eq!(pos, 2);
        assert_eq!(ids(&queue), ["a2", "b", "c"]);
        assert_eq!(
            queue.remove(&b.queue_id, 2),
            Err(QueueError::Conflict(b.clone()))
        );
        queue.remove(&b.queue_id, 1).unwrap();
        assert_eq!(queue.remove(&b.queue_id, 1), Err(QueueError::NotFound));
        assert_eq!(queue.pop_front().unwrap().entry.prompt, "a2");
    }

    #[test]
    fn the_queue_is_bounded_by_count_and_by_encoded_bytes() {
        let mut queue = PromptQueue::default();
        for i in 0..MAX_QUEUED_PROMPTS {
            queue.push(format!("p{i}"), "you", "r".into()).unwrap();
        }
        assert!(matches!(
            queue.push("one more".into(), "you", "r".into()),
            Err(QueueError::Full(_))
        ));
        queue.clear();
        // Control characters escape to six bytes each: the bound counts
        // what a snapshot would carry, not the prompt's length.
        let heavy = "\u{1}".repeat(256 * 1024);
        let mut pushed = 0;
        while queue.push(heavy.clone(), "you", "r".into()).is_ok() {
            pushed += 1;
        }
        assert_eq!(pushed, 2);
        let snapshot = serde_json::to_vec(&queue.snapshot()).unwrap();
        assert!(snapshot.len() <= MAX_QUEUED_BYTES + 64);
        let first = queue.snapshot()[0].clone();
        queue.remove(&first.queue_id, 1).unwrap();
        queue.push(heavy, "you", "r".into()).unwrap();
    }
}
