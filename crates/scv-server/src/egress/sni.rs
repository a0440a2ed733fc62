//! The server name a TLS ClientHello asks for (its SNI extension), read
//! from the first bytes of a tunnel without decrypting anything.

/// The most a ClientHello may take (several records), read before the
/// tunnel is opened.
pub const MAX_HELLO: usize = 64 * 1024;

/// What the bytes so far say.
#[derive(Debug, PartialEq, Eq)]
pub enum Hello {
    /// Not all of the ClientHello has come yet.
    Incomplete,
    /// Not a TLS ClientHello.
    NotTls,
    /// A ClientHello, with its server name if it has one.
    Name(Option<String>),
}

/// Reads the ClientHello at the start of `bytes`.
pub fn parse(bytes: &[u8]) -> Hello {
    // Gather the handshake messages' bytes from the records.
    let mut handshake = Vec::new();
    let mut at = 0;
    loop {
        let Some(header) = bytes.get(at..at + 5) else {
            // The next record's header has not all come.
            return match bytes.get(at) {
                Some(kind) if *kind != 0x16 => Hello::NotTls,
                _ => Hello::Incomplete,
            };
        };
        if header[0] != 0x16 || header[1] != 0x03 {
            return Hello::NotTls;
        }
        let len = usize::from(u16::from_be_bytes([header[3], header[4]]));
        let Some(body) = bytes.get(at + 5..at + 5 + len) else {
            return Hello::Incomplete;
        };
        handshake.extend_from_slice(body);
        at += 5 + len;
        if handshake.len() >= 4 {
            if handshake[0] != 0x01 {
                return Hello::NotTls;
            }
            let need = 4
                + (usize::from(handshake[1]) << 16
                    | usize::from(handshake[2]) << 8
                    | usize::from(handshake[3]));
            if handshake.len() >= need {
                return match server_name(&handshake[4..need]) {
                    Some(name) => Hello::Name(name),
                    None => Hello::NotTls,
                };
            }
        }
    }
}

/// The SNI host name of a ClientHello body; `None` when it is malformed.
fn server_name(hello: &[u8]) -> Option<Option<String>> {
    let mut r = Reader(hello);
    r.take(2 + 32)?; // version, random
    let session = r.u8()?;
    r.take(usize::from(session))?;
    let suites = r.u16()?;
    r.take(usize::from(suites))?;
    let compression = r.u8()?;
    r.take(usize::from(compression))?;
    if r.0.is_empty() {
        return Some(None);
    }
    let total = r.u16()?;
    let mut exts = Reader(r.take(usize::from(total))?);
    while !exts.0.is_empty() {
        let kind = exts.u16()?;
        let len = exts.u16()?;
        let data = exts.take(usize::from(len))?;
        if kind != 0 {
            continue;
        }
        let mut list = Reader(data);
        let list_len = list.u16()?;
        let mut names = Reader(list.take(usize::from(list_len))?);
        while !names.0.is_empty() {
            let name_type = names.u8()?;
            let len = names.u16()?;
            let name = names.take(usize::from(len))?;
            if name_type == 0 {
                return Some(Some(String::from_utf8_lossy(name).into_owned()));
            }
        }
        return Some(None);
    }
    Some(None)
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_be_bytes([b[0], b[1]]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ClientHello naming `name` (or none), split into records of at
    /// most `record` bytes.
    fn hello(name: Option<&str>, record: usize) -> Vec<u8> {
        let mut body = vec![0x03, 0x03];
        body.extend([7u8; 32]);
        body.push(0); // session id
        body.extend([0, 2, 0x13, 0x01]); // one suite
        body.extend([1, 0]); // null compression
        let mut exts = Vec::new();
        if let Some(name) = name {
            let n = name.as_bytes();
            let mut sni = Vec::new();
            sni.extend(((n.len() + 3) as u16).to_be_bytes());
            sni.push(0);
            sni.extend((n.len() as u16).to_be_bytes());
            sni.extend(n);
            exts.extend([0, 0]);
            exts.extend((sni.len() as u16).to_be_bytes());
            exts.extend(sni);
        }
        exts.extend([0, 0x2b, 0, 3, 2, 3, 4]); // supported_versions
        body.extend((exts.len() as u16).to_be_bytes());
        body.extend(exts);
        let mut message = vec![1, 0, 0, 0];
        message[1..4].copy_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
        message.extend(body);
        let mut out = Vec::new();
        for chunk in message.chunks(record) {
            out.extend([0x16, 0x03, 0x01]);
            out.extend((chunk.len() as u16).to_be_bytes());
            out.extend(chunk);
        }
        out
    }

    #[test]
    fn the_server_name_is_read_from_whole_and_split_hellos() {
        let whole = hello(Some("crates.io"), 16384);
        assert_eq!(parse(&whole), Hello::Name(Some("crates.io".into())));
        for cut in 0..whole.len() {
            assert_eq!(parse(&whole[..cut]), Hello::Incomplete, "cut at {cut}");
        }
        let split = hello(Some("pypi.org"), 20);
        assert_eq!(parse(&split), Hello::Name(Some("pypi.org".into())));
        assert_eq!(parse(&split[..split.len() - 1]), Hello::Incomplete);
        assert_eq!(parse(&hello(None, 16384)), Hello::Name(None));
        assert_eq!(parse(b"GET / HTTP/1.1\r\n\r\n"), Hello::NotTls);
        assert_eq!(parse(b"SSH-2.0-x\r\n"), Hello::NotTls);
    }
}
