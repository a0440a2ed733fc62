//! The one way the server takes a lock: a lock whose holder panicked is
//! taken all the same. What these locks guard (queues, books, caches) is
//! left consistent between statements, and a panic in one session must
//! not wedge every other session that shares the lock.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// `mutex`, locked (poisoned or not).
pub(crate) fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `mutex`'s value, borrowed mutably (poisoned or not).
pub(crate) fn get_mut<T: ?Sized>(mutex: &mut Mutex<T>) -> &mut T {
    mutex.get_mut().unwrap_or_else(PoisonError::into_inner)
}
