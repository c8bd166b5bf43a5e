//! Writes packets into a caller's buffer: header, ID, length, stuffed instruction and parameters,
//! CRC. Parameters are pushed piece by piece so callers never assemble them in a second buffer.

use crate::crc;
use crate::instruction::Instruction;
use crate::stuffing::Stuffer;

/// The four bytes every packet starts with.
pub const HEADER: [u8; 4] = [0xFF, 0xFF, 0xFD, 0x00];
/// Header, ID and the two length bytes.
pub const PREFIX_LEN: usize = 7;
/// Bytes of a packet besides its stuffed parameters: prefix, instruction, CRC.
pub const OVERHEAD: usize = PREFIX_LEN + 1 + 2;

/// The output buffer was too small for the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferFull;

/// A packet being written. Create with [`PacketWriter::new`], push parameters, then `finish`.
pub struct PacketWriter<'a> {
    buf: &'a mut [u8],
    len: usize,
    stuffer: Stuffer,
    overflow: bool,
}

impl<'a> PacketWriter<'a> {
    pub fn new(buf: &'a mut [u8], id: u8, instruction: Instruction) -> Self {
        Self::with_raw_instruction(buf, id, instruction as u8)
    }

    /// Like `new` with any instruction byte, for tests that send what no enum allows.
    pub fn with_raw_instruction(buf: &'a mut [u8], id: u8, instruction: u8) -> Self {
        let mut writer = Self {
            buf,
            len: 0,
            stuffer: Stuffer::default(),
            overflow: false,
        };
        writer.raw(&HEADER);
        writer.raw(&[id, 0, 0]);
        writer.byte(instruction);
        writer
    }

    /// Bytes written so far, the CRC not included.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends parameter bytes, stuffing as needed.
    pub fn push(&mut self, bytes: &[u8]) -> &mut Self {
        // Once over the buffer, the packet is lost anyway: do not spend time counting.
        if self.overflow {
            return self;
        }
        for &b in bytes {
            self.byte(b);
        }
        self
    }

    pub fn push_u8(&mut self, v: u8) -> &mut Self {
        self.push(&[v])
    }

    pub fn push_u16(&mut self, v: u16) -> &mut Self {
        self.push(&v.to_le_bytes())
    }

    pub fn push_u32(&mut self, v: u32) -> &mut Self {
        self.push(&v.to_le_bytes())
    }

    /// Writes length and CRC and returns the packet's size in bytes.
    pub fn finish(mut self) -> Result<usize, BufferFull> {
        self.patch_length();
        if self.overflow || self.len + 2 > self.buf.len() {
            return Err(BufferFull);
        }
        let crc = crc::crc16(&self.buf[..self.len]);
        self.raw(&crc.to_le_bytes());
        Ok(self.len)
    }

    /// Stores the length field: instruction, stuffed parameters and the CRC still to come.
    fn patch_length(&mut self) {
        let length = (self.len + 2 - PREFIX_LEN) as u16;
        if self.buf.len() >= PREFIX_LEN {
            self.buf[5..7].copy_from_slice(&length.to_le_bytes());
        }
    }

    fn byte(&mut self, b: u8) {
        self.raw(&[b]);
        if self.stuffer.needs_stuffing_after(b) {
            self.raw(&[0xFD]);
        }
    }

    fn raw(&mut self, bytes: &[u8]) {
        for &b in bytes {
            match self.buf.get_mut(self.len) {
                Some(slot) => *slot = b,
                None => self.overflow = true,
            }
            self.len += 1;
        }
    }
}

/// Writes a whole packet whose parameters are the concatenation of `parts`.
pub fn encode(
    buf: &mut [u8],
    id: u8,
    instruction: Instruction,
    parts: &[&[u8]],
) -> Result<usize, BufferFull> {
    let mut writer = PacketWriter::new(buf, id, instruction);
    for part in parts {
        writer.push(part);
    }
    writer.finish()
}

/// Writes a status packet: instruction 0x55, the error byte, then `data`.
pub fn encode_status(buf: &mut [u8], id: u8, error: u8, data: &[u8]) -> Result<usize, BufferFull> {
    encode(buf, id, Instruction::Status, &[&[error], data])
}
