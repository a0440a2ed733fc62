//! Deterministic cuts of an input into the pieces a socket or an HTTP body
//! might deliver: the sizes come from one seed byte of the input, so a
//! finding replays exactly. Seed 0 delivers everything at once.

pub fn pieces(seed: u8, data: &[u8]) -> Vec<&[u8]> {
    if seed == 0 {
        return vec![data];
    }
    let mut state = (u32::from(seed).wrapping_mul(2_654_435_761)) | 1;
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        // xorshift32
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        // Mostly small pieces, sometimes empty ones, now and then a big one.
        let size = match state % 16 {
            0 => 0,
            1 => (state >> 8) as usize % 4096,
            _ => (state >> 8) as usize % 24 + 1,
        };
        let (piece, tail) = rest.split_at(size.min(rest.len()));
        out.push(piece);
        rest = tail;
    }
    out
}
