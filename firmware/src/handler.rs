//! Answers instruction packets as 17 devices: 16 servos (the IDs of the config's servo table,
//! 1-16 on the shipped robot) and the board (ID 100). Every answer goes out through `send` as a
//! finished status packet.

use crate::controller::Controller;
use crate::tables::MAX_TABLE_LEN;
use clawrl_protocol::command::{BulkRead, BulkWrite, SyncRead, SyncWrite};
use clawrl_protocol::encoder::PacketWriter;
use clawrl_protocol::units::ids;
use clawrl_protocol::{
    ALERT_BIT, BROADCAST_ID, Command, ErrorCode, Instruction, Packet, ParseError, crc,
    encode_status,
};

/// Room for the largest answer: a FAST SYNC READ of the whole board table, stuffed.
pub const RESPONSE_CAPACITY: usize = 1024;

/// One of the devices this board answers as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    Servo(usize),
    Board,
}

impl Controller {
    /// The device that answers to bus ID `id`, through the config's servo table.
    pub fn device(&self, id: u8) -> Option<Device> {
        if id == ids::BOARD {
            return Some(Device::Board);
        }
        self.config.slot_of(id).map(Device::Servo)
    }

    pub fn device_id(&self, device: Device) -> u8 {
        match device {
            Device::Servo(i) => self.config.servos[i].id,
            Device::Board => ids::BOARD,
        }
    }

    /// Every device, in ID order (the order broadcast PING answers come in).
    pub fn devices(&self) -> impl Iterator<Item = Device> + '_ {
        (0..BROADCAST_ID).filter_map(|id| self.device(id))
    }

    /// Whether a packet is for this board at all (the watchdog is fed only by those).
    pub fn is_for_us(&self, packet: &Packet<'_>) -> bool {
        packet.id == BROADCAST_ID || self.device(packet.id).is_some()
    }

    /// Handles one decoded packet; answers go to `send`.
    pub fn handle(&mut self, packet: &Packet<'_>, now_us: u64, send: &mut dyn FnMut(&[u8])) {
        if !self.is_for_us(packet) || packet.instruction == Instruction::Status as u8 {
            return;
        }
        self.note_traffic(now_us);
        let target = self.device(packet.id);
        self.feed_bus_watchdogs(target, now_us);
        match Command::parse(packet) {
            Ok(command) => self.dispatch(target, command, send),
            Err(e) => {
                let code = match e {
                    ParseError::UnknownInstruction => ErrorCode::Instruction,
                    ParseError::BadLength => ErrorCode::DataLength,
                };
                if let Some(device) = target {
                    self.reply(device, Err(code), send);
                }
            }
        }
    }

    /// Each servo's Bus Watchdog counts the packets that servo receives: to its own ID, or
    /// broadcast (SYNC WRITE of the goals included).
    fn feed_bus_watchdogs(&mut self, target: Option<Device>, now_us: u64) {
        match target {
            Some(Device::Servo(i)) => self.servos[i].bus_watchdog.feed(now_us),
            Some(Device::Board) => {}
            None => self
                .servos
                .iter_mut()
                .for_each(|s| s.bus_watchdog.feed(now_us)),
        }
    }

    fn dispatch(
        &mut self,
        target: Option<Device>,
        command: Command<'_>,
        send: &mut dyn FnMut(&[u8]),
    ) {
        match (command, target) {
            (Command::Ping, Some(d)) => self.reply_ping(d, send),
            (Command::Ping, None) => self.devices().for_each(|d| self.reply_ping(d, send)),
            (Command::Read { address, length }, Some(d)) => {
                self.reply_read(d, address, length, send)
            }
            (Command::Write { address, data }, Some(d)) => {
                let result = self.write(d, address, data);
                self.reply(d, result.map(|_| &[][..]), send);
            }
            (Command::Write { address, data }, None) => {
                for i in 0..ids::SERVO_COUNT {
                    let _ = self.write(Device::Servo(i), address, data);
                }
            }
            (Command::Reboot, Some(d)) => {
                self.reboot_device(d);
                self.reply(d, Ok(&[]), send);
            }
            (Command::SyncRead(r), None) => self.reply_sync_read(r, send),
            (Command::FastSyncRead(r), None) => self.reply_fast_sync_read(r, send),
            (Command::SyncWrite(w), None) => self.apply_sync_write(w),
            (Command::BulkRead(r), None) => self.reply_bulk_read(r, send),
            (Command::BulkWrite(w), None) => self.apply_bulk_write(w),
            // REG WRITE, ACTION, FACTORY RESET, CLEAR, and sync/bulk sent to one ID.
            (_, Some(d)) => self.reply(d, Err(ErrorCode::Instruction), send),
            (_, None) => {}
        }
    }

    fn write(&mut self, device: Device, address: u16, data: &[u8]) -> Result<(), ErrorCode> {
        match device {
            Device::Servo(i) => self.write_servo(i, address, data),
            Device::Board => self.write_board(address, data),
        }
    }

    fn reboot_device(&mut self, device: Device) {
        match device {
            // Hardware Error Status mirrors latched board faults: only CLEAR releases it. The
            // Bus Watchdog is RAM on an X-series servo: a reboot resets it to 0 (off).
            Device::Servo(i) => {
                self.servos[i].torque_enabled = false;
                self.servos[i].bus_watchdog = Default::default();
            }
            Device::Board => self.reboot(),
        }
    }

    /// Error byte of a device's status: the alert bit says "read Hardware Error Status".
    fn alert(&self, device: Device) -> u8 {
        let alert = match device {
            Device::Servo(i) => self.servos[i].hw_error != 0,
            Device::Board => self.safety.faults() != 0,
        };
        if alert { ALERT_BIT } else { 0 }
    }

    fn reply(&self, device: Device, result: Result<&[u8], ErrorCode>, send: &mut dyn FnMut(&[u8])) {
        let (error, data) = match result {
            Ok(data) => (0, data),
            Err(code) => (code as u8, &[][..]),
        };
        let mut buf = [0u8; RESPONSE_CAPACITY];
        if let Ok(n) = encode_status(
            &mut buf,
            self.device_id(device),
            error | self.alert(device),
            data,
        ) {
            send(&buf[..n]);
        }
    }

    fn reply_ping(&self, device: Device, send: &mut dyn FnMut(&[u8])) {
        let model = match device {
            Device::Servo(_) => clawrl_protocol::table::servo::MODEL_NUMBER,
            Device::Board => clawrl_protocol::table::board::MODEL_NUMBER,
        };
        let [lo, hi] = model.to_le_bytes();
        self.reply(device, Ok(&[lo, hi, crate::tables::FIRMWARE_VERSION]), send);
    }

    /// The bytes of a register range, or why it cannot be read.
    fn read_range<'b>(
        &self,
        device: Device,
        address: u16,
        length: u16,
        table: &'b mut [u8; MAX_TABLE_LEN],
    ) -> Result<&'b [u8], ErrorCode> {
        let len = match device {
            Device::Servo(i) => self.render_servo(i, table),
            Device::Board => self.render_board(table),
        };
        let (start, end) = (address as usize, address as usize + length as usize);
        if length == 0 || end > len {
            return Err(ErrorCode::Access);
        }
        Ok(&table[start..end])
    }

    fn reply_read(&self, device: Device, address: u16, length: u16, send: &mut dyn FnMut(&[u8])) {
        let mut table = [0u8; MAX_TABLE_LEN];
        let result = self.read_range(device, address, length, &mut table);
        self.reply(device, result, send);
    }

    fn reply_sync_read(&self, r: SyncRead<'_>, send: &mut dyn FnMut(&[u8])) {
        for device in r.ids.iter().filter_map(|&id| self.device(id)) {
            self.reply_read(device, r.address, r.length, send);
        }
    }

    fn reply_bulk_read(&self, r: BulkRead<'_>, send: &mut dyn FnMut(&[u8])) {
        for e in r.entries() {
            if let Some(device) = self.device(e.id) {
                self.reply_read(device, e.address, e.length, send);
            }
        }
    }

    /// One status packet from ID 0xFE with each device's `error, ID, data, CRC` in turn; the
    /// last device's CRC is the packet's own. Each inner CRC covers that device's error, ID
    /// and data (see PROTOCOL.md).
    fn reply_fast_sync_read(&self, r: SyncRead<'_>, send: &mut dyn FnMut(&[u8])) {
        let mut buf = [0u8; RESPONSE_CAPACITY];
        let mut w = PacketWriter::new(&mut buf, BROADCAST_ID, Instruction::Status);
        let devices = r.ids.iter().filter_map(|&id| self.device(id));
        let count = devices.clone().count();
        // Refuse before doing any work an answer that cannot fit: a hostile length must not
        // cost the control loop a long zero-fill.
        if count * (4 + r.length as usize) + 10 > RESPONSE_CAPACITY {
            return;
        }
        for (n, device) in devices.enumerate() {
            let mut table = [0u8; MAX_TABLE_LEN];
            let (error, data) = match self.read_range(device, r.address, r.length, &mut table) {
                Ok(data) => (self.alert(device), data),
                // A device that cannot answer still fills its slot, so the shares stay aligned.
                Err(code) => (code as u8 | self.alert(device), &[][..]),
            };
            let head = [error, self.device_id(device)];
            w.push(&head);
            w.push(data);
            if data.is_empty() {
                (0..r.length).for_each(|_| {
                    w.push_u8(0);
                });
            }
            if n + 1 < count {
                let mut crc = crc::update(crc::crc16(&head), data);
                if data.is_empty() {
                    crc = (0..r.length).fold(crc, |c, _| crc::update(c, &[0]));
                }
                w.push_u16(crc);
            }
        }
        if count > 0
            && let Ok(n) = w.finish()
        {
            send(&buf[..n]);
        }
    }

    fn apply_sync_write(&mut self, w: SyncWrite<'_>) {
        for (id, data) in w.entries() {
            if let Some(device) = self.device(id) {
                let _ = self.write(device, w.address, data);
            }
        }
    }

    fn apply_bulk_write(&mut self, w: BulkWrite<'_>) {
        for e in w.entries() {
            if let Some(device) = self.device(e.id) {
                let _ = self.write(device, e.address, e.data);
            }
        }
    }
}
