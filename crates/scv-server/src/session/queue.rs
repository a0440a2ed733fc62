//! The session's prompt queue. Ids, revisions and positions are assigned
//! here; every change needs the entry's current revision.

use scv_protocol::QueueEntry;

#[derive(Debug, Default)]
pub struct PromptQueue {
    entries: Vec<Queued>,
}

/// A queued prompt and the request that submitted it (turn events of the
/// turn it becomes answer that request).
#[derive(Debug, Clone)]
pub struct Queued {
    pub entry: QueueEntry,
    pub request_id: String,
}

#[derive(Debug, PartialEq, Eq)]
pub enum QueueError {
    NotFound,
    /// The revision was stale; holds the entry as it is now.
    Conflict(QueueEntry),
}

impl PromptQueue {
    pub fn snapshot(&self) -> Vec<QueueEntry> {
        self.entries.iter().map(|q| q.entry.clone()).collect()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Appends a prompt; returns the new entry and its position.
    pub fn push(
        &mut self,
        prompt: String,
        submitter: &str,
        request_id: String,
    ) -> (QueueEntry, usize) {
        let entry = QueueEntry {
            queue_id: uuid::Uuid::new_v4().to_string(),
            revision: 1,
            prompt,
            submitter: submitter.to_string(),
        };
        self.entries.push(Queued {
            entry: entry.clone(),
            request_id,
        });
        (entry, self.entries.len() - 1)
    }

    pub fn pop_front(&mut self) -> Option<Queued> {
        (!self.entries.is_empty()).then(|| self.entries.remove(0))
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

    pub fn update(
        &mut self,
        queue_id: &str,
        revision: u64,
        prompt: String,
    ) -> Result<QueueEntry, QueueError> {
        let index = self.find(queue_id, revision)?;
        let entry = &mut self.entries[index].entry;
        entry.prompt = prompt;
        entry.revision += 1;
        Ok(entry.clone())
    }

    /// Moves an entry before `before` (to the end when `None`); returns the
    /// entry and its new position.
    pub fn move_entry(
        &mut self,
        queue_id: &str,
        revision: u64,
        before: Option<&str>,
    ) -> Result<(QueueEntry, usize), QueueError> {
        let index = self.find(queue_id, revision)?;
        if let Some(before) = before {
            if !self.entries.iter().any(|q| q.entry.queue_id == before) {
                return Err(QueueError::NotFound);
            }
        }
        let mut moved = self.entries.remove(index);
        moved.entry.revision += 1;
        let position = match before {
            Some(before) if before != queue_id => self
                .entries
                .iter()
                .position(|q| q.entry.queue_id == before)
                .expect("checked above"),
            Some(_) => index,
            None => self.entries.len(),
        };
        let entry = moved.entry.clone();
        self.entries.insert(position, moved);
        Ok((entry, position))
    }

    pub fn remove(&mut self, queue_id: &str, revision: u64) -> Result<QueueEntry, QueueError> {
        let index = self.find(queue_id, revision)?;
        Ok(self.entries.remove(index).entry)
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
        let (a, _) = queue.push("a".into(), "you", "1".into());
        let (b, _) = queue.push("b".into(), "you", "2".into());
        let (c, pos) = queue.push("c".into(), "you", "3".into());
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
}
