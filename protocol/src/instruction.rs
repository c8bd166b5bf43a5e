//! Instruction codes, the status error byte and the IDs with special meaning.

/// ID every device listens to; devices never answer a broadcast except PING, SYNC READ,
/// FAST SYNC READ and BULK READ, which name who answers.
pub const BROADCAST_ID: u8 = 0xFE;
/// Highest ID a device may have.
pub const MAX_DEVICE_ID: u8 = 0xFC;

/// Instruction byte of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Instruction {
    Ping = 0x01,
    Read = 0x02,
    Write = 0x03,
    RegWrite = 0x04,
    Action = 0x05,
    FactoryReset = 0x06,
    Reboot = 0x08,
    Clear = 0x10,
    Status = 0x55,
    SyncRead = 0x82,
    SyncWrite = 0x83,
    FastSyncRead = 0x8A,
    BulkRead = 0x92,
    BulkWrite = 0x93,
}

impl Instruction {
    pub const ALL: [Instruction; 14] = [
        Self::Ping,
        Self::Read,
        Self::Write,
        Self::RegWrite,
        Self::Action,
        Self::FactoryReset,
        Self::Reboot,
        Self::Clear,
        Self::Status,
        Self::SyncRead,
        Self::SyncWrite,
        Self::FastSyncRead,
        Self::BulkRead,
        Self::BulkWrite,
    ];

    pub fn from_byte(byte: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|i| *i as u8 == byte)
    }
}

/// Error number in the low 7 bits of a status packet's error byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ErrorCode {
    /// The instruction could not be carried out (clawrl: refused by the safety state).
    ResultFail = 0x01,
    /// Unknown or unsupported instruction.
    Instruction = 0x02,
    /// CRC mismatch (never sent by clawrl: a packet with a bad CRC is dropped unanswered).
    Crc = 0x03,
    /// A value outside the register's range.
    DataRange = 0x04,
    /// Parameters too short or not matching the fields they address.
    DataLength = 0x05,
    /// A value beyond a configured limit.
    DataLimit = 0x06,
    /// Write to a read-only register, read past the table, or a write not allowed now.
    Access = 0x07,
}

/// Bit 7 of the error byte: the device has a hardware error; read Hardware Error Status.
pub const ALERT_BIT: u8 = 0x80;
