//! Control tables: where each register lives, its size, who may write it. The firmware renders
//! and applies them; the runtime uses the addresses. Units are in [`crate::units`] and
//! PROTOCOL.md.

pub mod board;
pub mod servo;

/// Who may write a register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    ReadOnly,
    ReadWrite,
}

/// One register: `size` bytes, little-endian, at `address`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    pub address: u16,
    pub size: u8,
    pub access: Access,
    pub name: &'static str,
}

impl Field {
    pub const fn ro(address: u16, size: u8, name: &'static str) -> Self {
        Field {
            address,
            size,
            access: Access::ReadOnly,
            name,
        }
    }

    pub const fn rw(address: u16, size: u8, name: &'static str) -> Self {
        Field {
            address,
            size,
            access: Access::ReadWrite,
            name,
        }
    }

    pub const fn end(&self) -> u16 {
        self.address + self.size as u16
    }
}

/// Why a write to a table is refused before any register changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutError {
    /// The range starts or ends inside a register, or runs past the table.
    Misaligned,
    /// The range covers a read-only register.
    ReadOnly,
}

/// The registers a write of `len` bytes at `address` covers, checked first so a write lands
/// whole or not at all. Gaps between registers are skipped.
pub fn fields_in_write(
    fields: &'static [Field],
    address: u16,
    len: usize,
    table_len: u16,
) -> Result<impl Iterator<Item = &'static Field> + Clone, LayoutError> {
    let end = address as usize + len;
    if end > table_len as usize {
        return Err(LayoutError::Misaligned);
    }
    for f in fields {
        let (fs, fe) = (f.address as usize, f.end() as usize);
        let overlaps = fs < end && fe > address as usize;
        if overlaps && (fs < address as usize || fe > end) {
            return Err(LayoutError::Misaligned);
        }
        if overlaps && f.access == Access::ReadOnly {
            return Err(LayoutError::ReadOnly);
        }
    }
    Ok(fields
        .iter()
        .filter(move |f| f.address >= address && (f.end() as usize) <= end))
}

/// Reads a little-endian value of `field.size` bytes from `data` at the field's offset within a
/// write starting at `base`. Signed registers are sign-extended by the caller.
pub fn field_value(field: &Field, base: u16, data: &[u8]) -> u32 {
    let start = (field.address - base) as usize;
    let mut bytes = [0u8; 4];
    bytes[..field.size as usize].copy_from_slice(&data[start..start + field.size as usize]);
    u32::from_le_bytes(bytes)
}
