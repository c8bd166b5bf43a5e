//! Byte stuffing: inside the instruction and parameter field, every `FF FF FD` gets an extra `FD`
//! so that no payload can look like the `FF FF FD 00` header. The length field counts the
//! stuffed bytes.

/// Tracks how much of the `FF FF FD` pattern the bytes emitted so far end with, so stuffing can
/// be done one byte at a time while a packet is written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stuffer {
    matched: u8,
}

impl Stuffer {
    /// Feeds one payload byte; returns true when an extra `0xFD` must follow it on the wire.
    pub fn needs_stuffing_after(&mut self, byte: u8) -> bool {
        self.matched = match (self.matched, byte) {
            (0, 0xFF) | (1, 0xFF) => self.matched + 1,
            // Three or more FFs in a row still end in "FF FF".
            (2, 0xFF) => 2,
            (2, 0xFD) => {
                self.matched = 0;
                return true;
            }
            _ => 0,
        };
        false
    }
}

/// Removes stuffing in place and returns the unstuffed length. A `FF FF FD` not followed by the
/// stuffing `FD` is kept as is: the CRC has already vouched for the bytes.
pub fn unstuff_in_place(buf: &mut [u8]) -> usize {
    let mut read = 0;
    let mut write = 0;
    let mut stuffer = Stuffer::default();
    while read < buf.len() {
        let byte = buf[read];
        buf[write] = byte;
        write += 1;
        read += 1;
        if stuffer.needs_stuffing_after(byte) && read < buf.len() && buf[read] == 0xFD {
            read += 1;
        }
    }
    write
}

/// Number of bytes `payload` takes on the wire once stuffed.
pub fn stuffed_len(payload: &[u8]) -> usize {
    let mut stuffer = Stuffer::default();
    payload.len()
        + payload
            .iter()
            .filter(|&&b| stuffer.needs_stuffing_after(b))
            .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stuff(payload: &[u8], out: &mut [u8]) -> usize {
        let mut stuffer = Stuffer::default();
        let mut n = 0;
        for &b in payload {
            out[n] = b;
            n += 1;
            if stuffer.needs_stuffing_after(b) {
                out[n] = 0xFD;
                n += 1;
            }
        }
        n
    }

    #[test]
    fn table_of_cases() {
        let cases: &[(&[u8], &[u8])] = &[
            (&[0xFF, 0xFF, 0xFD], &[0xFF, 0xFF, 0xFD, 0xFD]),
            (
                &[0xFF, 0xFF, 0xFF, 0xFD, 0x01],
                &[0xFF, 0xFF, 0xFF, 0xFD, 0xFD, 0x01],
            ),
            (&[0xFF, 0xFD, 0xFF, 0xFF], &[0xFF, 0xFD, 0xFF, 0xFF]),
            (
                &[0xFF, 0xFF, 0xFD, 0xFF, 0xFF, 0xFD],
                &[0xFF, 0xFF, 0xFD, 0xFD, 0xFF, 0xFF, 0xFD, 0xFD],
            ),
            (&[0xFF, 0xFF, 0xFD, 0xFD], &[0xFF, 0xFF, 0xFD, 0xFD, 0xFD]),
        ];
        for (plain, stuffed) in cases {
            let mut out = [0u8; 16];
            let n = stuff(plain, &mut out);
            assert_eq!(&out[..n], *stuffed, "stuffing {plain:02X?}");
            assert_eq!(stuffed_len(plain), stuffed.len());
            let mut back = [0u8; 16];
            back[..n].copy_from_slice(&out[..n]);
            let m = unstuff_in_place(&mut back[..n]);
            assert_eq!(&back[..m], *plain, "unstuffing {stuffed:02X?}");
        }
    }
}
