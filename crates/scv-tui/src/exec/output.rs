//! `scv exec`'s two output streams, buffered together: what the printer
//! writes to stdout and stderr is held, in order, and written when the
//! batch of events it came from is done ([`Output::flush`]), when it
//! switches streams, or past [`MAX_HELD`] bytes. A 15,000-delta answer
//! was 15,004 `write`s, one per delta (94.6 % of exec's system-call time);
//! now it is a write or two per batch the daemon's connection had ready.
//! The order of lines across the two streams is kept: the held bytes are
//! written to their stream before anything goes to the other.
//!
//! The printer's own `flush` after each delta is a no-op here: the batch's
//! end is the flush. Dropping the output writes what is held.

use std::cell::RefCell;
use std::io::{self, Write};
use std::rc::Rc;

/// Bytes held before they are written even mid-batch.
pub(crate) const MAX_HELD: usize = 64 * 1024;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stream {
    Out,
    Err,
}

struct Shared<O: Write, E: Write> {
    out: O,
    err: E,
    held: Vec<u8>,
    held_for: Stream,
}

impl<O: Write, E: Write> Shared<O, E> {
    fn write(&mut self, to: Stream, bytes: &[u8]) -> io::Result<()> {
        if to != self.held_for && !self.held.is_empty() {
            self.flush()?;
        }
        self.held_for = to;
        self.held.extend_from_slice(bytes);
        if self.held.len() >= MAX_HELD {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.held.is_empty() {
            return Ok(());
        }
        let held = std::mem::take(&mut self.held);
        let written = match self.held_for {
            Stream::Out => self.out.write_all(&held).and_then(|()| self.out.flush()),
            Stream::Err => self.err.write_all(&held).and_then(|()| self.err.flush()),
        };
        self.held = held;
        self.held.clear();
        written
    }
}

impl<O: Write, E: Write> Drop for Shared<O, E> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// The two streams; [`Output::halves`] gives the printer its writers.
pub(crate) struct Output<O: Write, E: Write> {
    shared: Rc<RefCell<Shared<O, E>>>,
}

/// One stream's writer (stdout's or stderr's).
pub(crate) struct Half<O: Write, E: Write> {
    shared: Rc<RefCell<Shared<O, E>>>,
    to: Stream,
}

impl<O: Write, E: Write> Output<O, E> {
    pub(crate) fn new(out: O, err: E) -> Self {
        Output {
            shared: Rc::new(RefCell::new(Shared {
                out,
                err,
                held: Vec::with_capacity(MAX_HELD),
                held_for: Stream::Out,
            })),
        }
    }

    /// Writers for stdout and stderr.
    pub(crate) fn halves(&self) -> (Half<O, E>, Half<O, E>) {
        let half = |to| Half {
            shared: self.shared.clone(),
            to,
        };
        (half(Stream::Out), half(Stream::Err))
    }

    /// Writes what is held (the batch is done).
    pub(crate) fn flush(&self) -> io::Result<()> {
        self.shared.borrow_mut().flush()
    }
}

impl<O: Write, E: Write> Write for Half<O, E> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.shared.borrow_mut().write(self.to, bytes)?;
        Ok(bytes.len())
    }

    /// Held until the batch is done ([`Output::flush`]).
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each `write` call: which stream ('o' / 'e') and its bytes.
    type Log = Rc<RefCell<Vec<(char, Vec<u8>)>>>;

    /// A writer that records each `write` call it gets.
    #[derive(Clone, Default)]
    struct Calls(Log, char);

    impl Write for Calls {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().push((self.1, bytes.to_vec()));
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn held_bytes_go_out_in_order_a_write_per_run_of_one_stream() {
        let log = Rc::new(RefCell::new(Vec::new()));
        let output = Output::new(Calls(log.clone(), 'o'), Calls(log.clone(), 'e'));
        let (mut out, mut err) = output.halves();
        for i in 0..1000 {
            write!(out, "d{i} ").unwrap();
            out.flush().unwrap();
        }
        assert!(
            log.borrow().is_empty(),
            "nothing written before the batch ends"
        );
        writeln!(err, "[tool] read_file").unwrap();
        write!(out, "after").unwrap();
        output.flush().unwrap();
        let calls = log.borrow().clone();
        let streams: Vec<char> = calls.iter().map(|(s, _)| *s).collect();
        assert_eq!(streams, ['o', 'e', 'o']);
        let text = |c: &(char, Vec<u8>)| String::from_utf8(c.1.clone()).unwrap();
        assert!(text(&calls[0]).starts_with("d0 d1 ") && text(&calls[0]).ends_with("d999 "));
        assert_eq!(text(&calls[1]), "[tool] read_file\n");
        assert_eq!(text(&calls[2]), "after");
        // Past the bound, written mid-batch; what is held is written on drop.
        log.borrow_mut().clear();
        let chunk = vec![b'x'; MAX_HELD / 2 + 1];
        out.write_all(&chunk).unwrap();
        out.write_all(&chunk).unwrap();
        assert_eq!(log.borrow().len(), 1);
        write!(err, "last").unwrap();
        drop((out, err, output));
        let calls = log.borrow();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1], ('e', b"last".to_vec()));
    }
}
