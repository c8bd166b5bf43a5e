//! Serves the firmware core on a pseudo-terminal with a simple servo model behind it. Prints the
//! pty path, then runs until killed.

use clap::Parser;
use clawrl_firmware::FirmwareConfig;
use clawrl_firmware::virtual_board::{ServoModel, VirtualBoard};

#[derive(Parser)]
#[command(about = "clawrl virtual board: the servo firmware on a pseudo-terminal")]
struct Args {
    /// Serve on a new pseudo-terminal and print its path (the only transport so far).
    #[arg(long, default_value_t = true)]
    pty: bool,
    /// Command watchdog timeout at boot, in ms.
    #[arg(long)]
    watchdog_ms: Option<u16>,
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let mut config = FirmwareConfig::claw_foot();
    if let Some(ms) = args.watchdog_ms {
        config.watchdog_ms = ms.clamp(config.watchdog_min_ms, config.watchdog_max_ms);
    }
    let board = VirtualBoard::spawn_on_pty(config.clone(), ServoModel::new(&config))?;
    println!("{}", board.path());
    loop {
        std::thread::park();
    }
}
