//! Typed instructions: what the parameters of each instruction mean, parsed from a decoded
//! [`Packet`] and written back with [`Command::encode`]. Borrowing only; nothing is copied.

use crate::decoder::Packet;
use crate::encoder::{BufferFull, PacketWriter};
use crate::instruction::Instruction;

/// An instruction packet's meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command<'a> {
    Ping,
    Read {
        address: u16,
        length: u16,
    },
    Write {
        address: u16,
        data: &'a [u8],
    },
    RegWrite {
        address: u16,
        data: &'a [u8],
    },
    Action,
    FactoryReset {
        mode: u8,
    },
    Reboot,
    /// CLEAR's parameters are a device-specific key; kept raw.
    Clear {
        params: &'a [u8],
    },
    SyncRead(SyncRead<'a>),
    /// Same parameters as SYNC READ; the answer is one combined status packet.
    FastSyncRead(SyncRead<'a>),
    SyncWrite(SyncWrite<'a>),
    BulkRead(BulkRead<'a>),
    BulkWrite(BulkWrite<'a>),
}

/// Why a packet's parameters do not fit its instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// Not an instruction this crate knows (or a status packet).
    UnknownInstruction,
    /// Parameters too short, too long or not a whole number of entries.
    BadLength,
}

/// SYNC READ / FAST SYNC READ: the same register range from several devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncRead<'a> {
    pub address: u16,
    pub length: u16,
    pub ids: &'a [u8],
}

/// SYNC WRITE: the same register range on several devices, `length` data bytes each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncWrite<'a> {
    pub address: u16,
    pub length: u16,
    /// Repeated `ID, data[length]`.
    pub raw: &'a [u8],
}

impl<'a> SyncWrite<'a> {
    pub fn entries(&self) -> impl Iterator<Item = (u8, &'a [u8])> + 'a {
        let stride = self.length as usize + 1;
        self.raw.chunks_exact(stride).map(|c| (c[0], &c[1..]))
    }
}

/// BULK READ: a different register range from each device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkRead<'a> {
    /// Repeated `ID, address(2), length(2)`.
    pub raw: &'a [u8],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkReadEntry {
    pub id: u8,
    pub address: u16,
    pub length: u16,
}

impl<'a> BulkRead<'a> {
    pub fn entries(&self) -> impl Iterator<Item = BulkReadEntry> + 'a {
        self.raw.chunks_exact(5).map(|c| BulkReadEntry {
            id: c[0],
            address: u16::from_le_bytes([c[1], c[2]]),
            length: u16::from_le_bytes([c[3], c[4]]),
        })
    }
}

/// BULK WRITE: a different register range on each device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkWrite<'a> {
    /// Repeated `ID, address(2), length(2), data[length]`.
    pub raw: &'a [u8],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkWriteEntry<'a> {
    pub id: u8,
    pub address: u16,
    pub data: &'a [u8],
}

impl<'a> BulkWrite<'a> {
    pub fn entries(&self) -> BulkWriteIter<'a> {
        BulkWriteIter { rest: self.raw }
    }

    /// True when the entries tile the parameters exactly.
    fn is_well_formed(raw: &[u8]) -> bool {
        let mut rest = raw;
        while !rest.is_empty() {
            match split_bulk_write_entry(rest) {
                Some((_, tail)) => rest = tail,
                None => return false,
            }
        }
        true
    }
}

pub struct BulkWriteIter<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for BulkWriteIter<'a> {
    type Item = BulkWriteEntry<'a>;
    fn next(&mut self) -> Option<Self::Item> {
        let (entry, tail) = split_bulk_write_entry(self.rest)?;
        self.rest = tail;
        Some(entry)
    }
}

fn split_bulk_write_entry(raw: &[u8]) -> Option<(BulkWriteEntry<'_>, &[u8])> {
    let (head, tail) = raw.split_at_checked(5)?;
    let length = u16::from_le_bytes([head[3], head[4]]) as usize;
    let (data, rest) = tail.split_at_checked(length)?;
    let entry = BulkWriteEntry {
        id: head[0],
        address: u16::from_le_bytes([head[1], head[2]]),
        data,
    };
    Some((entry, rest))
}

fn u16_at(p: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([p[i], p[i + 1]])
}

impl<'a> Command<'a> {
    /// Interprets a decoded instruction packet.
    pub fn parse(packet: &Packet<'a>) -> Result<Self, ParseError> {
        use Instruction as I;
        let p = packet.params;
        let instruction = packet.instruction().ok_or(ParseError::UnknownInstruction)?;
        let exact = |n: usize| {
            if p.len() == n {
                Ok(())
            } else {
                Err(ParseError::BadLength)
            }
        };
        let at_least = |n: usize| {
            if p.len() >= n {
                Ok(())
            } else {
                Err(ParseError::BadLength)
            }
        };
        Ok(match instruction {
            I::Ping => exact(0).map(|_| Command::Ping)?,
            I::Read => exact(4).map(|_| Command::Read {
                address: u16_at(p, 0),
                length: u16_at(p, 2),
            })?,
            I::Write => at_least(2).map(|_| Command::Write {
                address: u16_at(p, 0),
                data: &p[2..],
            })?,
            I::RegWrite => at_least(2).map(|_| Command::RegWrite {
                address: u16_at(p, 0),
                data: &p[2..],
            })?,
            I::Action => exact(0).map(|_| Command::Action)?,
            I::FactoryReset => exact(1).map(|_| Command::FactoryReset { mode: p[0] })?,
            I::Reboot => exact(0).map(|_| Command::Reboot)?,
            I::Clear => Command::Clear { params: p },
            I::SyncRead => Command::SyncRead(parse_sync_read(p)?),
            I::FastSyncRead => Command::FastSyncRead(parse_sync_read(p)?),
            I::SyncWrite => Command::SyncWrite(parse_sync_write(p)?),
            I::BulkRead if !p.is_empty() && p.len().is_multiple_of(5) => {
                Command::BulkRead(BulkRead { raw: p })
            }
            I::BulkWrite if !p.is_empty() && BulkWrite::is_well_formed(p) => {
                Command::BulkWrite(BulkWrite { raw: p })
            }
            I::BulkRead | I::BulkWrite => return Err(ParseError::BadLength),
            I::Status => return Err(ParseError::UnknownInstruction),
        })
    }

    pub fn instruction(&self) -> Instruction {
        match self {
            Command::Ping => Instruction::Ping,
            Command::Read { .. } => Instruction::Read,
            Command::Write { .. } => Instruction::Write,
            Command::RegWrite { .. } => Instruction::RegWrite,
            Command::Action => Instruction::Action,
            Command::FactoryReset { .. } => Instruction::FactoryReset,
            Command::Reboot => Instruction::Reboot,
            Command::Clear { .. } => Instruction::Clear,
            Command::SyncRead(_) => Instruction::SyncRead,
            Command::FastSyncRead(_) => Instruction::FastSyncRead,
            Command::SyncWrite(_) => Instruction::SyncWrite,
            Command::BulkRead(_) => Instruction::BulkRead,
            Command::BulkWrite(_) => Instruction::BulkWrite,
        }
    }

    /// Writes this command as an instruction packet to device `id`; returns its size.
    pub fn encode(&self, id: u8, buf: &mut [u8]) -> Result<usize, BufferFull> {
        let mut w = PacketWriter::new(buf, id, self.instruction());
        match *self {
            Command::Ping | Command::Action | Command::Reboot => {}
            Command::Read { address, length } => {
                w.push_u16(address).push_u16(length);
            }
            Command::Write { address, data } | Command::RegWrite { address, data } => {
                w.push_u16(address).push(data);
            }
            Command::FactoryReset { mode } => {
                w.push_u8(mode);
            }
            Command::Clear { params } => {
                w.push(params);
            }
            Command::SyncRead(r) | Command::FastSyncRead(r) => {
                w.push_u16(r.address).push_u16(r.length).push(r.ids);
            }
            Command::SyncWrite(s) => {
                w.push_u16(s.address).push_u16(s.length).push(s.raw);
            }
            Command::BulkRead(BulkRead { raw }) | Command::BulkWrite(BulkWrite { raw }) => {
                w.push(raw);
            }
        }
        w.finish()
    }
}

fn parse_sync_read(p: &[u8]) -> Result<SyncRead<'_>, ParseError> {
    if p.len() < 5 {
        return Err(ParseError::BadLength);
    }
    Ok(SyncRead {
        address: u16_at(p, 0),
        length: u16_at(p, 2),
        ids: &p[4..],
    })
}

fn parse_sync_write(p: &[u8]) -> Result<SyncWrite<'_>, ParseError> {
    if p.len() < 4 {
        return Err(ParseError::BadLength);
    }
    let length = u16_at(p, 2);
    let raw = &p[4..];
    let stride = length as usize + 1;
    if length == 0 || raw.is_empty() || !raw.len().is_multiple_of(stride) {
        return Err(ParseError::BadLength);
    }
    Ok(SyncWrite {
        address: u16_at(p, 0),
        length,
        raw,
    })
}

/// A status packet's contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status<'a> {
    pub id: u8,
    /// Error byte: error number in bits 0-6, alert in bit 7.
    pub error: u8,
    pub data: &'a [u8],
}

impl<'a> Status<'a> {
    pub fn parse(packet: &Packet<'a>) -> Option<Self> {
        let (&error, data) = packet.params.split_first()?;
        (packet.instruction == Instruction::Status as u8).then_some(Status {
            id: packet.id,
            error,
            data,
        })
    }
}

/// One device's share of a FAST SYNC READ answer: `error, ID, data[length], CRC(2)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastSyncEntry<'a> {
    pub id: u8,
    pub error: u8,
    pub data: &'a [u8],
}

/// Splits the parameters of a FAST SYNC READ status packet (ID 0xFE) into the devices' shares.
/// The last share has no CRC of its own: the packet's CRC closes it.
pub fn fast_sync_entries(params: &[u8], length: u16) -> impl Iterator<Item = FastSyncEntry<'_>> {
    let share = 2 + length as usize;
    params
        .chunks(share + 2)
        .filter(move |c| c.len() >= share)
        .map(move |c| FastSyncEntry {
            error: c[0],
            id: c[1],
            data: &c[2..share],
        })
}
