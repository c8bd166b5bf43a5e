//! Streaming decoder: bytes go in one at a time as the UART delivers them, whole packets come
//! out. It never allocates, never panics, and after garbage, a truncated packet or a bad CRC it
//! finds the next header by rescanning the bytes it already holds, one byte past the false start.

use crate::crc;
use crate::encoder::{HEADER, PREFIX_LEN};
use crate::instruction::Instruction;
use crate::stuffing::unstuff_in_place;

/// One decoded packet; `params` are unstuffed and borrow the decoder's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    pub id: u8,
    /// Raw instruction byte, kept raw so an unknown instruction can still be answered.
    pub instruction: u8,
    pub params: &'a [u8],
}

impl Packet<'_> {
    pub fn instruction(&self) -> Option<Instruction> {
        Instruction::from_byte(self.instruction)
    }
}

/// Why bytes were thrown away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// A header whose length field is below 3 or larger than the decoder can hold.
    BadLength,
    /// A whole packet whose CRC did not match.
    BadCrc,
}

/// Counters a link monitor can read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DecoderStats {
    pub packets: u32,
    pub bad_crc: u32,
    pub bad_length: u32,
    /// Bytes skipped while hunting for a header.
    pub skipped: u32,
    /// Bytes lost because the buffer was full (the caller did not drain `next`).
    pub overflowed: u32,
}

/// Streaming decoder holding up to `N` bytes, so it accepts packets of up to `N` bytes.
/// Use: `decoder.push(byte); while let Some(event) = decoder.next_event() { ... }`.
pub struct Decoder<const N: usize = 1024> {
    buf: [u8; N],
    start: usize,
    end: usize,
    /// Size of the packet handed out last; dropped on the next call.
    handed_out: usize,
    stats: DecoderStats,
    /// Stream position (bytes pushed since creation, wrapping) of `buf[start]`.
    start_abs: u32,
    /// Stream position up to which bytes were examined for nested headers.
    examined_abs: u32,
    /// Headers seen inside the packet being waited for: (stream position, total size).
    candidates: [(u32, u16); MAX_CANDIDATES],
    n_candidates: usize,
}

/// Nested headers tracked at once; more only happen in adversarial garbage, where the extra ones
/// are found later by the one-byte rescans.
const MAX_CANDIDATES: usize = 8;

impl<const N: usize> Default for Decoder<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Decoder<N> {
    pub const fn new() -> Self {
        Self {
            buf: [0; N],
            start: 0,
            end: 0,
            handed_out: 0,
            stats: DecoderStats {
                packets: 0,
                bad_crc: 0,
                bad_length: 0,
                skipped: 0,
                overflowed: 0,
            },
            start_abs: 0,
            examined_abs: 0,
            candidates: [(0, 0); MAX_CANDIDATES],
            n_candidates: 0,
        }
    }

    pub fn stats(&self) -> DecoderStats {
        self.stats
    }

    /// Bytes held that are not yet part of a packet handed out.
    pub fn pending(&self) -> usize {
        self.end - self.start - self.handed_out
    }

    /// Forgets everything held, e.g. after the link was re-opened.
    pub fn clear(&mut self) {
        self.start_abs = self.start_abs.wrapping_add((self.end - self.start) as u32);
        self.start = 0;
        self.end = 0;
        self.handed_out = 0;
        self.n_candidates = 0;
    }

    /// Stores one received byte. When the buffer is full the oldest byte is dropped, which is
    /// what resynchronisation would do with it anyway.
    pub fn push(&mut self, byte: u8) {
        self.release_handed_out();
        if self.end == N {
            if self.start == 0 {
                self.start = 1;
                self.start_abs = self.start_abs.wrapping_add(1);
                self.stats.overflowed += 1;
            }
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        self.buf[self.end] = byte;
        self.end += 1;
    }

    /// The next packet or error among the bytes held, or `None` when more bytes are needed.
    pub fn next_event(&mut self) -> Option<Result<Packet<'_>, DecodeError>> {
        self.release_handed_out();
        loop {
            let held = &self.buf[self.start..self.end];
            let head = held.len().min(HEADER.len());
            if held[..head] != HEADER[..head] {
                self.skip(1);
                self.stats.skipped += 1;
                continue;
            }
            if held.len() < PREFIX_LEN {
                return None;
            }
            let length = u16::from_le_bytes([held[5], held[6]]) as usize;
            if length < 3 || PREFIX_LEN + length > N {
                self.skip(1);
                self.stats.bad_length += 1;
                return Some(Err(DecodeError::BadLength));
            }
            if held.len() < PREFIX_LEN + length {
                // A false header (garbage, or a packet cut short) may claim more bytes than
                // will come; a complete valid packet behind it proves it false.
                match self.nested_packet() {
                    Some(k) => {
                        self.skip(k);
                        self.stats.skipped += k as u32;
                        continue;
                    }
                    None => return None,
                }
            }
            return Some(self.check_and_take(length));
        }
    }

    /// Checks the CRC of the complete packet at `start` and hands it out if it matches.
    fn check_and_take(&mut self, length: usize) -> Result<Packet<'_>, DecodeError> {
        let total = PREFIX_LEN + length;
        let packet = &self.buf[self.start..self.start + total];
        let wire_crc = u16::from_le_bytes([packet[total - 2], packet[total - 1]]);
        if crc::crc16(&packet[..total - 2]) != wire_crc {
            self.skip(1);
            self.stats.bad_crc += 1;
            return Err(DecodeError::BadCrc);
        }
        self.stats.packets += 1;
        self.handed_out = total;
        let id = packet[4];
        let instruction = packet[PREFIX_LEN];
        let params_start = self.start + PREFIX_LEN + 1;
        let params = &mut self.buf[params_start..self.start + total - 2];
        let unstuffed = unstuff_in_place(params);
        Ok(Packet {
            id,
            instruction,
            params: &params[..unstuffed],
        })
    }

    /// Offset (from `start`) of a complete packet with a valid CRC that begins inside the
    /// packet being waited for. Each byte is examined once: a header is noted when its length
    /// bytes arrive, and its CRC checked when its last byte does.
    fn nested_packet(&mut self) -> Option<usize> {
        let end_abs = self.start_abs.wrapping_add((self.end - self.start) as u32);
        let behind = self.examined_abs.wrapping_sub(self.start_abs);
        let mut q = if behind as usize <= self.end - self.start {
            self.examined_abs
        } else {
            self.start_abs
        };
        let (start_abs, held) = (self.start_abs, self.end - self.start);
        self.n_candidates = retain(&mut self.candidates, self.n_candidates, |c| {
            c.0.wrapping_sub(start_abs) as usize <= held
        });
        while q != end_abs {
            let rel = q.wrapping_sub(self.start_abs) as usize;
            q = q.wrapping_add(1);
            self.note_header_ending_at(rel);
            if let Some(k) = self.complete_candidate_ending_at(rel) {
                self.examined_abs = q;
                return Some(k);
            }
        }
        self.examined_abs = end_abs;
        None
    }

    /// Notes a nested header whose length field ends at `rel` (relative to `start`).
    fn note_header_ending_at(&mut self, rel: usize) {
        if rel < PREFIX_LEN || self.n_candidates == MAX_CANDIDATES {
            return;
        }
        let at = self.start + rel + 1 - PREFIX_LEN;
        let prefix = &self.buf[at..at + PREFIX_LEN];
        let length = u16::from_le_bytes([prefix[5], prefix[6]]) as usize;
        if prefix[..HEADER.len()] == HEADER && length >= 3 && PREFIX_LEN + length <= N {
            let abs = self.start_abs.wrapping_add((rel + 1 - PREFIX_LEN) as u32);
            self.candidates[self.n_candidates] = (abs, (PREFIX_LEN + length) as u16);
            self.n_candidates += 1;
        }
    }

    /// Checks the nested candidates whose last byte is at `rel`; returns the first valid one.
    fn complete_candidate_ending_at(&mut self, rel: usize) -> Option<usize> {
        let mut found = None;
        let (start, start_abs) = (self.start, self.start_abs);
        let buf = &self.buf;
        self.n_candidates = retain(&mut self.candidates, self.n_candidates, |&(abs, total)| {
            let k = abs.wrapping_sub(start_abs) as usize;
            if k + total as usize != rel + 1 {
                return true;
            }
            let packet = &buf[start + k..start + k + total as usize];
            let n = packet.len();
            if found.is_none()
                && crc::crc16(&packet[..n - 2])
                    == u16::from_le_bytes([packet[n - 2], packet[n - 1]])
            {
                found = Some(k);
            }
            false
        });
        found
    }

    fn release_handed_out(&mut self) {
        if self.handed_out > 0 {
            self.skip(self.handed_out);
            self.handed_out = 0;
        }
    }

    fn skip(&mut self, n: usize) {
        self.start_abs = self.start_abs.wrapping_add(n as u32);
        self.start += n;
        if self.start >= self.end {
            self.start = 0;
            self.end = 0;
        }
    }
}

/// Keeps the first `n` candidates that `keep` accepts, in order; returns how many remain.
fn retain(
    candidates: &mut [(u32, u16)],
    n: usize,
    mut keep: impl FnMut(&(u32, u16)) -> bool,
) -> usize {
    let mut kept = 0;
    for i in 0..n {
        let c = candidates[i];
        if keep(&c) {
            candidates[kept] = c;
            kept += 1;
        }
    }
    kept
}
