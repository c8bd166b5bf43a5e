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
}

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
        self.start = 0;
        self.end = 0;
        self.handed_out = 0;
    }

    /// Stores one received byte. When the buffer is full the oldest byte is dropped, which is
    /// what resynchronisation would do with it anyway.
    pub fn push(&mut self, byte: u8) {
        self.release_handed_out();
        if self.end == N {
            if self.start == 0 {
                self.start = 1;
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
                match self.nested_packet_offset() {
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

    /// Offset of a complete packet with a valid CRC that starts after the held packet's start.
    fn nested_packet_offset(&self) -> Option<usize> {
        let held = &self.buf[self.start..self.end];
        (1..held.len().saturating_sub(PREFIX_LEN + 2)).find(|&k| {
            let rest = &held[k..];
            if rest[..HEADER.len()] != HEADER {
                return false;
            }
            let length = u16::from_le_bytes([rest[5], rest[6]]) as usize;
            let total = PREFIX_LEN + length;
            length >= 3 && rest.len() >= total && {
                let crc = u16::from_le_bytes([rest[total - 2], rest[total - 1]]);
                crc::crc16(&rest[..total - 2]) == crc
            }
        })
    }

    fn release_handed_out(&mut self) {
        if self.handed_out > 0 {
            self.skip(self.handed_out);
            self.handed_out = 0;
        }
    }

    fn skip(&mut self, n: usize) {
        self.start += n;
        if self.start >= self.end {
            self.start = 0;
            self.end = 0;
        }
    }
}
