//! Properties: every instruction survives encode -> decode -> parse; the decoder never panics
//! and always finds a valid packet after arbitrary garbage.

use clawrl_protocol::command::{BulkRead, BulkWrite, SyncRead, SyncWrite};
use clawrl_protocol::{Command, DecodeError, Decoder};
use proptest::prelude::*;

/// Owned form of a command so proptest can generate it; `view` borrows it as a [`Command`].
#[derive(Debug, Clone)]
enum Owned {
    Ping,
    Read(u16, u16),
    Write(u16, Vec<u8>),
    RegWrite(u16, Vec<u8>),
    Action,
    FactoryReset(u8),
    Reboot,
    Clear(Vec<u8>),
    SyncRead(u16, u16, Vec<u8>),
    FastSyncRead(u16, u16, Vec<u8>),
    SyncWrite(u16, u16, Vec<u8>),
    BulkRead(Vec<u8>),
    BulkWrite(Vec<u8>),
}

impl Owned {
    fn view(&self) -> Command<'_> {
        match self {
            Owned::Ping => Command::Ping,
            Owned::Read(a, l) => Command::Read {
                address: *a,
                length: *l,
            },
            Owned::Write(a, d) => Command::Write {
                address: *a,
                data: d,
            },
            Owned::RegWrite(a, d) => Command::RegWrite {
                address: *a,
                data: d,
            },
            Owned::Action => Command::Action,
            Owned::FactoryReset(m) => Command::FactoryReset { mode: *m },
            Owned::Reboot => Command::Reboot,
            Owned::Clear(p) => Command::Clear { params: p },
            Owned::SyncRead(a, l, ids) => Command::SyncRead(SyncRead {
                address: *a,
                length: *l,
                ids,
            }),
            Owned::FastSyncRead(a, l, ids) => Command::FastSyncRead(SyncRead {
                address: *a,
                length: *l,
                ids,
            }),
            Owned::SyncWrite(a, l, raw) => Command::SyncWrite(SyncWrite {
                address: *a,
                length: *l,
                raw,
            }),
            Owned::BulkRead(raw) => Command::BulkRead(BulkRead { raw }),
            Owned::BulkWrite(raw) => Command::BulkWrite(BulkWrite { raw }),
        }
    }
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    // Bias towards the header bytes so stuffing is exercised often.
    prop::collection::vec(
        prop_oneof![3 => any::<u8>(), 1 => Just(0xFF), 1 => Just(0xFD)],
        0..max,
    )
}

/// Garbage that often holds a false header whose length claims bytes that never come.
fn garbage() -> impl Strategy<Value = Vec<u8>> {
    (
        bytes(200),
        any::<bool>(),
        any::<u8>(),
        any::<u16>(),
        bytes(20),
    )
        .prop_map(|(mut g, header, id, len, tail)| {
            if header {
                g.extend_from_slice(&[0xFF, 0xFF, 0xFD, 0x00, id]);
                g.extend_from_slice(&len.to_le_bytes());
                g.extend_from_slice(&tail);
            }
            g
        })
}

fn sync_write() -> impl Strategy<Value = Owned> {
    (any::<u16>(), 1u16..8, 1usize..6).prop_flat_map(|(a, l, n)| {
        prop::collection::vec(any::<u8>(), n * (l as usize + 1))
            .prop_map(move |raw| Owned::SyncWrite(a, l, raw))
    })
}

fn bulk_write() -> impl Strategy<Value = Owned> {
    prop::collection::vec((any::<u8>(), any::<u16>(), bytes(6)), 1..5).prop_map(|entries| {
        let mut raw = Vec::new();
        for (id, a, d) in entries {
            raw.push(id);
            raw.extend_from_slice(&a.to_le_bytes());
            raw.extend_from_slice(&(d.len() as u16).to_le_bytes());
            raw.extend_from_slice(&d);
        }
        Owned::BulkWrite(raw)
    })
}

fn command() -> impl Strategy<Value = Owned> {
    let ids = || prop::collection::vec(any::<u8>(), 1..20);
    prop_oneof![
        Just(Owned::Ping),
        (any::<u16>(), any::<u16>()).prop_map(|(a, l)| Owned::Read(a, l)),
        (any::<u16>(), bytes(64)).prop_map(|(a, d)| Owned::Write(a, d)),
        (any::<u16>(), bytes(64)).prop_map(|(a, d)| Owned::RegWrite(a, d)),
        Just(Owned::Action),
        any::<u8>().prop_map(Owned::FactoryReset),
        Just(Owned::Reboot),
        bytes(8).prop_map(Owned::Clear),
        (any::<u16>(), any::<u16>(), ids()).prop_map(|(a, l, i)| Owned::SyncRead(a, l, i)),
        (any::<u16>(), any::<u16>(), ids()).prop_map(|(a, l, i)| Owned::FastSyncRead(a, l, i)),
        sync_write(),
        prop::collection::vec(any::<u8>(), 1..6).prop_flat_map(|n| {
            prop::collection::vec(any::<u8>(), n.len() * 5).prop_map(Owned::BulkRead)
        }),
        bulk_write(),
    ]
}

/// Feeds `bytes` and collects every packet decoded, as owned (id, instruction, params).
fn decode_stream<const N: usize>(decoder: &mut Decoder<N>, bytes: &[u8]) -> Vec<(u8, u8, Vec<u8>)> {
    let mut out = Vec::new();
    for &b in bytes {
        decoder.push(b);
        while let Some(event) = decoder.next_event() {
            if let Ok(p) = event {
                out.push((p.id, p.instruction, p.params.to_vec()));
            }
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn every_instruction_round_trips(cmd in command(), id in any::<u8>()) {
        let mut buf = [0u8; 1024];
        let n = cmd.view().encode(id, &mut buf).unwrap();
        let mut decoder: Decoder<1024> = Decoder::new();
        let mut seen = 0;
        for (i, &b) in buf[..n].iter().enumerate() {
            decoder.push(b);
            while let Some(event) = decoder.next_event() {
                let packet = event.unwrap();
                prop_assert_eq!(i, n - 1, "packet completed early");
                prop_assert_eq!(packet.id, id);
                prop_assert_eq!(Command::parse(&packet).unwrap(), cmd.view());
                seen += 1;
            }
        }
        prop_assert_eq!(seen, 1);
    }

    #[test]
    fn status_packets_round_trip(id in 0u8..0xFD, error in any::<u8>(), data in bytes(300)) {
        let mut buf = [0u8; 1024];
        let n = clawrl_protocol::encode_status(&mut buf, id, error, &data).unwrap();
        let mut decoder: Decoder<1024> = Decoder::new();
        let packets = decode_stream(&mut decoder, &buf[..n]);
        prop_assert_eq!(packets.len(), 1);
        let p = clawrl_protocol::Packet { id: packets[0].0, instruction: packets[0].1, params: &packets[0].2 };
        let status = clawrl_protocol::Status::parse(&p).unwrap();
        prop_assert_eq!((status.id, status.error, status.data), (id, error, &data[..]));
    }

    #[test]
    fn decoder_never_panics_on_arbitrary_bytes(noise in prop::collection::vec(any::<u8>(), 0..2048)) {
        let mut decoder: Decoder<64> = Decoder::new();
        decode_stream(&mut decoder, &noise);
        prop_assert!(decoder.pending() <= 64);
    }

    #[test]
    fn decoder_resynchronises_after_garbage(
        garbage in garbage(),
        cmd in command(),
        id in 0u8..0xFD,
    ) {
        let mut buf = [0u8; 1024];
        let n = cmd.view().encode(id, &mut buf).unwrap();
        let mut stream = garbage.clone();
        stream.extend_from_slice(&buf[..n]);
        let mut decoder: Decoder<1024> = Decoder::new();
        let packets = decode_stream(&mut decoder, &stream);
        // The real packet must be the last one out: garbage may hold accidental packets but
        // can never hide a valid packet that follows it.
        let last = packets.last().expect("the valid packet was not found");
        let reparsed = clawrl_protocol::Packet { id: last.0, instruction: last.1, params: &last.2 };
        prop_assert_eq!(reparsed.id, id);
        prop_assert_eq!(Command::parse(&reparsed).unwrap(), cmd.view());
    }

    #[test]
    fn truncated_then_valid_is_recovered(cmd in command(), cut in 1usize..40) {
        let mut buf = [0u8; 1024];
        let n = cmd.view().encode(3, &mut buf).unwrap();
        let cut = cut.min(n - 1);
        let mut stream = buf[..cut].to_vec();
        stream.extend_from_slice(&buf[..n]);
        // The cut packet's header claims n bytes; the first n bytes of the stream are then a
        // "packet" of its own. Once in about 65 536 cases its CRC-16 matches by chance, and no
        // decoder can tell that from a real packet (proptest found such a case): skip those.
        let false_crc = u16::from_le_bytes([stream[n - 2], stream[n - 1]]);
        prop_assume!(clawrl_protocol::crc::crc16(&stream[..n - 2]) != false_crc);
        let mut decoder: Decoder<1024> = Decoder::new();
        let packets = decode_stream(&mut decoder, &stream);
        let last = packets.last().expect("packet after a truncated one was lost");
        let reparsed = clawrl_protocol::Packet { id: last.0, instruction: last.1, params: &last.2 };
        prop_assert_eq!(reparsed.id, 3);
        prop_assert_eq!(Command::parse(&reparsed).unwrap(), cmd.view());
    }
}

#[test]
fn bad_crc_is_reported_and_skipped() {
    let mut buf = [0u8; 64];
    let n = Command::Ping.encode(1, &mut buf).unwrap();
    let mut corrupt = buf[..n].to_vec();
    corrupt[n - 1] ^= 0x01;
    let mut decoder: Decoder<64> = Decoder::new();
    let mut errors = Vec::new();
    for &b in corrupt.iter().chain(&buf[..n]) {
        decoder.push(b);
        while let Some(event) = decoder.next_event() {
            errors.push(event.map(|p| p.id));
        }
    }
    assert_eq!(errors, vec![Err(DecodeError::BadCrc), Ok(1)]);
    assert_eq!(decoder.stats().bad_crc, 1);
}

#[test]
fn a_false_header_cannot_swallow_the_packet_behind_it() {
    // Garbage header claiming 900 bytes, then a real PING: the PING must come out as soon as
    // its last byte arrives, not 900 bytes later.
    let mut stream = vec![0xFF, 0xFF, 0xFD, 0x00, 0x01, 0x84, 0x03, 0x02];
    let mut buf = [0u8; 16];
    let n = Command::Ping.encode(7, &mut buf).unwrap();
    stream.extend_from_slice(&buf[..n]);
    let mut decoder: Decoder<1024> = Decoder::new();
    let packets = decode_stream(&mut decoder, &stream);
    assert_eq!(packets, vec![(7, 0x01, vec![])]);
}

/// The board's register codec: every named scale round-trips a value inside its register's
/// range to within half an LSB, and saturates outside it; a HIL value never takes the silent
/// IMU's code.
mod register_codec {
    use clawrl_protocol::table::board;
    use clawrl_protocol::units::registers::{self, decode, encode, encode_hil};
    use proptest::prelude::*;

    const SCALES: [(&str, f32); 5] = [
        ("gyro", registers::GYRO_PER_RAD_S),
        ("accelerometer", registers::ACCEL_PER_M_S2),
        ("quaternion", registers::QUAT_PER_UNIT),
        ("HIL position", registers::HIL_POSITION_PER_RAD),
        ("HIL current", registers::HIL_CURRENT_PER_MA),
    ];

    proptest! {
        #[test]
        fn values_in_range_round_trip_within_half_an_lsb(k in 0usize..5, x in -1.0f32..1.0) {
            let (name, per_unit) = SCALES[k];
            let v = x * (f32::from(i16::MAX) - 1.0) / per_unit;
            let back = decode(encode(v, per_unit), per_unit);
            // Half an LSB from the rounding, plus 1 % of one for f32 arithmetic: at 2 rad a HIL
            // position's product and quotient each carry a rounding error of about 0.002 LSB,
            // and a 0.1 % allowance failed (2.04305 -> 2.0431, CI 2026-12-06).
            prop_assert!((back - v).abs() <= 0.51 / per_unit, "{name}: {v} -> {back}");
            prop_assert_eq!(encode_hil(v, per_unit), encode(v, per_unit));
        }

        #[test]
        fn values_out_of_range_saturate(k in 0usize..5, x in 1.01f32..1e6, negative: bool) {
            let (name, per_unit) = SCALES[k];
            let v = if negative { -x } else { x } * f32::from(i16::MAX) / per_unit;
            let want = if negative { i16::MIN } else { i16::MAX };
            prop_assert_eq!(encode(v, per_unit), want, "{}", name);
            let hil = encode_hil(v, per_unit);
            prop_assert_ne!(hil, board::HIL_IMU_SILENT, "{}", name);
        }
    }

    /// The scales the runtime decodes with (SI per LSB) are the inverses of the ones the
    /// firmware encodes with.
    #[test]
    fn decode_scales_invert_encode_scales() {
        for (per_unit, per_lsb) in [
            (registers::GYRO_PER_RAD_S, registers::GYRO_RAD_S),
            (registers::ACCEL_PER_M_S2, registers::ACCEL_M_S2),
            (registers::QUAT_PER_UNIT, registers::QUAT),
        ] {
            assert!((f64::from(per_unit) * per_lsb - 1.0).abs() < 1e-12);
        }
    }
}
