//! The terrain curriculum (legged_gym's, on tilted floors): each environment climbs a ladder of
//! slope bands, one level up after an episode it walked as commanded, one down after a fall or
//! an episode it barely moved in. A teacher so spends its time at the steepest floor it can
//! nearly manage, instead of on floors it has mastered or cannot stand on yet.
//!
//! The level lives in the environment and changes only at a reset, from the episode just ended:
//! a seed's episode is then the same draw at the same level. A fresh environment starts at level
//! 0; `levels = 0` switches the curriculum off (every episode draws from the whole range).

/// Share of the commanded distance an episode must cover to move up a level.
pub const PROMOTE_SHARE: f64 = 0.7;
/// Below this share of the commanded distance (or after a fall) it moves down a level.
pub const DEMOTE_SHARE: f64 = 0.3;
/// Episodes asked to cover less than this (m: mostly stand-stills) leave the level alone.
pub const MIN_ASKED_M: f64 = 0.5;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct TerrainCurriculum {
    levels: usize,
    level: usize,
    /// This episode's distance along the commanded direction (m), and the distance it was
    /// asked to cover: the integral of the commanded planar speed.
    progress: f64,
    asked: f64,
}

impl TerrainCurriculum {
    pub fn new(levels: usize) -> Self {
        Self {
            levels,
            ..Self::default()
        }
    }

    pub fn level(&self) -> usize {
        self.level
    }

    /// Puts the environment at `level` (clamped to the ladder): a level carried over from
    /// an earlier set of environments or a checkpoint.
    pub fn set_level(&mut self, level: usize) {
        self.level = level.min(self.levels.saturating_sub(1));
    }

    /// The share of the episode's commanded distance covered so far (1 when nothing was asked).
    pub fn share(&self) -> f64 {
        if self.asked > 0.0 {
            self.progress / self.asked
        } else {
            1.0
        }
    }

    /// The slope band (degrees) of the current level within `range`; the whole range when off.
    pub fn band(&self, [lo, hi]: [f64; 2]) -> [f64; 2] {
        if self.levels == 0 {
            return [lo, hi];
        }
        let step = (hi - lo) / self.levels as f64;
        let l = self.level as f64;
        [lo + step * l, lo + step * (l + 1.0)]
    }

    /// Adds one control step: the commanded and measured planar velocity (body frame, m/s).
    pub fn record(&mut self, command: [f64; 2], velocity: [f64; 2], dt: f64) {
        let speed = command[0].hypot(command[1]);
        if speed < 1e-6 {
            return;
        }
        self.asked += speed * dt;
        self.progress += (velocity[0] * command[0] + velocity[1] * command[1]) / speed * dt;
    }

    /// Ends an episode: moves the level, then clears the episode's tallies.
    pub fn finish_episode(&mut self, fell: bool) {
        if self.levels > 0 && (fell || self.asked >= MIN_ASKED_M) {
            let share = self.share();
            if fell || share < DEMOTE_SHARE {
                self.level = self.level.saturating_sub(1);
            } else if share >= PROMOTE_SHARE {
                self.level = (self.level + 1).min(self.levels - 1);
            }
        }
        self.progress = 0.0;
        self.asked = 0.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn episode(c: &mut TerrainCurriculum, speed: f64, fell: bool) {
        for _ in 0..100 {
            c.record([0.3, 0.0], [speed, 0.0], 0.1);
        }
        c.finish_episode(fell);
    }

    #[test]
    fn walking_as_told_moves_up_and_stops_at_the_top() {
        let mut c = TerrainCurriculum::new(3);
        assert_eq!(c.band([5.0, 20.0]), [5.0, 10.0]);
        episode(&mut c, 0.25, false);
        assert_eq!(c.level(), 1);
        assert_eq!(c.band([5.0, 20.0]), [10.0, 15.0]);
        episode(&mut c, 0.3, false);
        episode(&mut c, 0.3, false);
        assert_eq!(c.level(), 2, "the top level holds");
    }

    #[test]
    fn a_fall_or_standing_moves_down_a_middling_walk_stays() {
        let mut c = TerrainCurriculum::new(4);
        episode(&mut c, 0.3, false);
        episode(&mut c, 0.3, false);
        assert_eq!(c.level(), 2);
        episode(&mut c, 0.15, false); // half the distance: between the two shares
        assert_eq!(c.level(), 2);
        episode(&mut c, 0.3, true);
        assert_eq!(c.level(), 1, "a fall demotes even at full speed");
        episode(&mut c, 0.0, false);
        assert_eq!(c.level(), 0);
        episode(&mut c, 0.0, false);
        assert_eq!(c.level(), 0);
    }

    #[test]
    fn sliding_back_is_negative_progress_and_stand_stills_leave_the_level() {
        let mut c = TerrainCurriculum::new(4);
        episode(&mut c, 0.3, false);
        for _ in 0..100 {
            c.record([0.0, 0.0], [0.0, 0.0], 0.1);
        }
        c.finish_episode(false);
        assert_eq!(c.level(), 1, "nothing asked: no change");
        for _ in 0..100 {
            c.record([0.0, 0.3], [0.0, -0.1], 0.1);
        }
        assert!(c.share() < 0.0);
        c.finish_episode(false);
        assert_eq!(c.level(), 0);
    }

    #[test]
    fn off_means_the_whole_range_and_no_levels() {
        let mut c = TerrainCurriculum::new(0);
        episode(&mut c, 0.3, false);
        assert_eq!(c.level(), 0);
        assert_eq!(c.band([5.0, 25.0]), [5.0, 25.0]);
    }
}
