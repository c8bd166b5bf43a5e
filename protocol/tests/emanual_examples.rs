//! Packets published in the ROBOTIS e-Manual (Protocol 2.0 page, instruction examples), byte for
//! byte: our encoder must produce them and our decoder must read them back. Nobody on this
//! project wrote these bytes, so they check CRC, length and field order independently.

use clawrl_protocol::command::{BulkRead, SyncRead, SyncWrite};
use clawrl_protocol::{Command, Decoder, Instruction, Status, encode_status};

fn encoded(command: Command<'_>, id: u8) -> Vec<u8> {
    let mut buf = [0u8; 256];
    let n = command.encode(id, &mut buf).unwrap();
    buf[..n].to_vec()
}

fn decode_all(bytes: &[u8]) -> Vec<(u8, u8, Vec<u8>)> {
    let mut decoder: Decoder<256> = Decoder::new();
    let mut out = Vec::new();
    for &b in bytes {
        decoder.push(b);
        while let Some(event) = decoder.next_event() {
            let p = event.expect("published packets have valid CRCs");
            out.push((p.id, p.instruction, p.params.to_vec()));
        }
    }
    out
}

#[test]
fn ping_instruction_and_status() {
    let ping = [0xFF, 0xFF, 0xFD, 0x00, 0x01, 0x03, 0x00, 0x01, 0x19, 0x4E];
    assert_eq!(encoded(Command::Ping, 1), ping);
    // Model number 1030 (XM430-W350), firmware version 38.
    let status = [
        0xFF, 0xFF, 0xFD, 0x00, 0x01, 0x07, 0x00, 0x55, 0x00, 0x06, 0x04, 0x26, 0x65, 0x5D,
    ];
    let mut buf = [0u8; 32];
    let n = encode_status(&mut buf, 1, 0, &[0x06, 0x04, 0x26]).unwrap();
    assert_eq!(&buf[..n], status);
    assert_eq!(
        decode_all(&status),
        vec![(1, 0x55, vec![0x00, 0x06, 0x04, 0x26])]
    );
}

#[test]
fn read_present_position() {
    let read = [
        0xFF, 0xFF, 0xFD, 0x00, 0x01, 0x07, 0x00, 0x02, 0x84, 0x00, 0x04, 0x00, 0x1D, 0x15,
    ];
    assert_eq!(
        encoded(
            Command::Read {
                address: 132,
                length: 4
            },
            1
        ),
        read
    );
    // Present position 166.
    let status = [
        0xFF, 0xFF, 0xFD, 0x00, 0x01, 0x08, 0x00, 0x55, 0x00, 0xA6, 0x00, 0x00, 0x00, 0x8C, 0xC0,
    ];
    let decoded = decode_all(&status);
    let (id, inst, params) = &decoded[0];
    let packet = clawrl_protocol::Packet {
        id: *id,
        instruction: *inst,
        params,
    };
    let s = Status::parse(&packet).unwrap();
    assert_eq!((s.id, s.error, s.data), (1, 0, &[0xA6, 0, 0, 0][..]));
}

#[test]
fn write_goal_position() {
    let write = [
        0xFF, 0xFF, 0xFD, 0x00, 0x01, 0x09, 0x00, 0x03, 0x74, 0x00, 0x00, 0x02, 0x00, 0x00, 0xCA,
        0x89,
    ];
    assert_eq!(
        encoded(
            Command::Write {
                address: 116,
                data: &512u32.to_le_bytes()
            },
            1
        ),
        write
    );
    let status = [
        0xFF, 0xFF, 0xFD, 0x00, 0x01, 0x04, 0x00, 0x55, 0x00, 0xA1, 0x0C,
    ];
    let mut buf = [0u8; 16];
    let n = encode_status(&mut buf, 1, 0, &[]).unwrap();
    assert_eq!(&buf[..n], status);
}

#[test]
fn reboot() {
    assert_eq!(
        encoded(Command::Reboot, 1),
        [0xFF, 0xFF, 0xFD, 0x00, 0x01, 0x03, 0x00, 0x08, 0x2F, 0x4E]
    );
}

#[test]
fn sync_read_and_write() {
    let sync_read = [
        0xFF, 0xFF, 0xFD, 0x00, 0xFE, 0x09, 0x00, 0x82, 0x84, 0x00, 0x04, 0x00, 0x01, 0x02, 0xCE,
        0xFA,
    ];
    let command = Command::SyncRead(SyncRead {
        address: 132,
        length: 4,
        ids: &[1, 2],
    });
    assert_eq!(encoded(command, 0xFE), sync_read);
    // Goal position 150 to ID 1 and 170 to ID 2.
    let sync_write = [
        0xFF, 0xFF, 0xFD, 0x00, 0xFE, 0x11, 0x00, 0x83, 0x74, 0x00, 0x04, 0x00, 0x01, 0x96, 0x00,
        0x00, 0x00, 0x02, 0xAA, 0x00, 0x00, 0x00, 0x82, 0x87,
    ];
    let raw = [0x01, 0x96, 0x00, 0x00, 0x00, 0x02, 0xAA, 0x00, 0x00, 0x00];
    let command = Command::SyncWrite(SyncWrite {
        address: 116,
        length: 4,
        raw: &raw,
    });
    assert_eq!(encoded(command, 0xFE), sync_write);
    let decoded = decode_all(&sync_write);
    let packet = clawrl_protocol::Packet {
        id: 0xFE,
        instruction: decoded[0].1,
        params: &decoded[0].2,
    };
    let Command::SyncWrite(parsed) = Command::parse(&packet).unwrap() else {
        panic!("not a sync write")
    };
    let entries: Vec<_> = parsed.entries().collect();
    assert_eq!(
        entries,
        vec![(1, &[0x96, 0, 0, 0][..]), (2, &[0xAA, 0, 0, 0][..])]
    );
}

#[test]
fn bulk_read_parses_its_entries() {
    // Model number-free example: 1 byte at 144 from ID 1, 4 bytes at 132 from ID 2.
    let raw = [0x01, 0x90, 0x00, 0x01, 0x00, 0x02, 0x84, 0x00, 0x04, 0x00];
    let bytes = encoded(Command::BulkRead(BulkRead { raw: &raw }), 0xFE);
    let decoded = decode_all(&bytes);
    assert_eq!(decoded[0].1, Instruction::BulkRead as u8);
    let packet = clawrl_protocol::Packet {
        id: 0xFE,
        instruction: decoded[0].1,
        params: &decoded[0].2,
    };
    let Command::BulkRead(parsed) = Command::parse(&packet).unwrap() else {
        panic!("not a bulk read")
    };
    let e: Vec<_> = parsed
        .entries()
        .map(|e| (e.id, e.address, e.length))
        .collect();
    assert_eq!(e, vec![(1, 144, 1), (2, 132, 4)]);
}

#[test]
fn byte_stuffing_on_the_wire() {
    // A write whose data contains the header pattern: FF FF FD must go out as FF FF FD FD,
    // the length field counting the stuffed byte.
    let bytes = encoded(
        Command::Write {
            address: 0x0100,
            data: &[0xFF, 0xFF, 0xFD, 0x01],
        },
        1,
    );
    assert_eq!(&bytes[..7], &[0xFF, 0xFF, 0xFD, 0x00, 0x01, 0x0A, 0x00]);
    assert_eq!(
        &bytes[7..15],
        &[0x03, 0x00, 0x01, 0xFF, 0xFF, 0xFD, 0xFD, 0x01]
    );
    let decoded = decode_all(&bytes);
    assert_eq!(decoded[0].2, vec![0x00, 0x01, 0xFF, 0xFF, 0xFD, 0x01]);
}
