//! Splits a serial byte stream into Dynamixel 2.0 packets (by header and length field, without
//! checking the CRC: that is the receiver's job) and the garbage between them, so faults can
//! act on whole packets and the bridge can see which instruction a packet carries.

const HEADER: [u8; 4] = [0xFF, 0xFF, 0xFD, 0x00];
/// Header, ID and length field.
const PREFIX: usize = 7;
const MAX_PACKET: usize = 1024;

/// One piece of the stream, in order: a packet or bytes that are not one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unit {
    Packet(Vec<u8>),
    Garbage(Vec<u8>),
}

impl Unit {
    pub fn bytes(&self) -> &[u8] {
        match self {
            Unit::Packet(b) | Unit::Garbage(b) => b,
        }
    }

    pub fn bytes_mut(&mut self) -> &mut Vec<u8> {
        match self {
            Unit::Packet(b) | Unit::Garbage(b) => b,
        }
    }

    /// ID, instruction and first two parameters (an address) of a packet.
    pub fn header(&self) -> Option<(u8, u8, Option<u16>)> {
        match self {
            Unit::Packet(b) => {
                let address = (b.len() >= 10).then(|| u16::from_le_bytes([b[8], b[9]]));
                Some((b[4], b[7], address))
            }
            Unit::Garbage(_) => None,
        }
    }
}

#[derive(Debug, Default)]
pub struct Framer {
    buf: Vec<u8>,
}

impl Framer {
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole unit, if the buffer holds one.
    pub fn next_unit(&mut self) -> Option<Unit> {
        let at = self.buf.windows(4).position(|w| w == HEADER);
        match at {
            Some(0) => {
                if self.buf.len() < PREFIX {
                    return None;
                }
                let total = PREFIX + u16::from_le_bytes([self.buf[5], self.buf[6]]) as usize;
                if !(PREFIX + 3..=MAX_PACKET).contains(&total) {
                    // Not a packet after all: its first byte is garbage.
                    return Some(Unit::Garbage(self.buf.drain(..1).collect()));
                }
                (self.buf.len() >= total).then(|| Unit::Packet(self.buf.drain(..total).collect()))
            }
            Some(i) => Some(Unit::Garbage(self.buf.drain(..i).collect())),
            // Keep what could be the start of a header.
            None if self.buf.len() > 3 => {
                let n = self.buf.len() - 3;
                Some(Unit::Garbage(self.buf.drain(..n).collect()))
            }
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clawrl_protocol::Command;

    fn packet(id: u8, c: Command<'_>) -> Vec<u8> {
        let mut buf = [0u8; 256];
        let n = c.encode(id, &mut buf).unwrap();
        buf[..n].to_vec()
    }

    #[test]
    fn packets_and_garbage_come_out_whole_and_in_order() {
        let read = packet(
            100,
            Command::Read {
                address: 80,
                length: 139,
            },
        );
        let ping = packet(3, Command::Ping);
        let mut stream = vec![0x00, 0xFF, 0x12];
        stream.extend(&read);
        stream.extend(&ping);
        let mut f = Framer::default();
        let mut units = Vec::new();
        // A byte at a time, as a UART delivers them.
        for b in &stream {
            f.push(&[*b]);
            while let Some(u) = f.next_unit() {
                units.push(u);
            }
        }
        let joined: Vec<u8> = units.iter().flat_map(|u| u.bytes().to_vec()).collect();
        assert_eq!(joined, stream[..joined.len()], "bytes lost or reordered");
        let packets: Vec<&Unit> = units
            .iter()
            .filter(|u| matches!(u, Unit::Packet(_)))
            .collect();
        assert_eq!(packets, [&Unit::Packet(read.clone()), &Unit::Packet(ping)]);
        assert_eq!(packets[0].header(), Some((100, 0x02, Some(80))));
    }
}
