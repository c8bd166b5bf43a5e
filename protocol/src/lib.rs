//! Dynamixel Protocol 2.0 wire format shared by the runtime and the firmware: CRC-16, byte
//! stuffing, a packet writer, a streaming decoder that resynchronises after garbage, typed
//! instructions, and clawrl's control tables. `no_std`, no allocation. See PROTOCOL.md.
#![cfg_attr(not(test), no_std)]

pub mod command;
pub mod crc;
pub mod decoder;
pub mod encoder;
pub mod instruction;
pub mod stuffing;
pub mod table;
pub mod units;

pub use command::{
    BulkRead, BulkReadEntry, BulkWrite, BulkWriteEntry, Command, ParseError, Status, SyncRead,
    SyncWrite,
};
pub use decoder::{DecodeError, Decoder, DecoderStats, Packet};
pub use encoder::{BufferFull, PacketWriter, encode, encode_status};
pub use instruction::{ALERT_BIT, BROADCAST_ID, ErrorCode, Instruction};
