//! CRC-16 of Dynamixel Protocol 2.0: polynomial 0x8005, initial value 0, not reflected, no final
//! xor (the CRC-16/BUYPASS variant). It covers every byte of a packet from the header up to the
//! CRC itself, after byte stuffing.

/// Table of the CRC of each byte value, built at compile time so the firmware keeps it in flash.
const TABLE: [u16; 256] = build_table();

const fn build_table() -> [u16; 256] {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x8005
            } else {
                crc << 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
}

/// Continues a CRC over more bytes: `update(update(0, a), b) == update(0, a ++ b)`.
pub fn update(crc: u16, bytes: &[u8]) -> u16 {
    bytes.iter().fold(crc, |crc, &b| {
        let index = ((crc >> 8) as u8 ^ b) as usize;
        (crc << 8) ^ TABLE[index]
    })
}

/// CRC of a whole byte slice.
pub fn crc16(bytes: &[u8]) -> u16 {
    update(0, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_value_of_crc16_buypass() {
        // The catalogue check value of CRC-16/BUYPASS over ASCII "123456789".
        assert_eq!(crc16(b"123456789"), 0xFEE8);
    }

    #[test]
    fn incremental_equals_whole() {
        let data = [0xFF, 0xFF, 0xFD, 0x00, 0x01, 0x03, 0x00, 0x01];
        assert_eq!(update(update(0, &data[..3]), &data[3..]), crc16(&data));
    }
}
