//! The matrix's progress on stderr: a bar on a terminal (indicatif), plain
//! lines otherwise (CI logs).
//!
//! Colour: indicatif styles a template's `{bar:24.cyan/blue}` through the
//! `console` crate, which turns colour off on its own for a stream that is
//! not a terminal or while NO_COLOR is set (even to an empty value), but
//! turns it back on for CLICOLOR_FORCE. The rig decides once for all its
//! output ([`sinkhole_base::term`]): without colour the bar's template names none,
//! so nothing console decides can colour it.
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sinkhole_model::SinkMode;

use super::{cell_text, human_duration, CellResult, CellStatus};
use crate::run;

/// The bar's template: coloured (cyan on blue) or plain.
fn bar_template(colour: bool) -> &'static str {
    if colour {
        "{spinner} [{elapsed_precise}] {bar:24.cyan/blue} {prefix} · {msg} · eta {eta}"
    } else {
        "{spinner} [{elapsed_precise}] {bar:24} {prefix} · {msg} · eta {eta}"
    }
}

/// Progress on stderr: a bar on a terminal, plain lines otherwise (CI logs).
pub(super) enum Reporter {
    Bar { bar: ProgressBar, label: Arc<Mutex<String>> },
    Lines { started: Instant },
}

impl Reporter {
    pub(super) fn new(cells: usize, mode_runs: u64, log: Option<PathBuf>) -> Reporter {
        if !std::io::stderr().is_terminal() {
            return Reporter::Lines { started: Instant::now() };
        }
        // The bar counts mode runs (cells differ a lot in size: a 5-mode,
        // 3-broker scenario is several times a 2-mode one), so its ETA tracks
        // the work left; the prefix counts cells.
        let bar = ProgressBar::with_draw_target(Some(mode_runs), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(bar_template(sinkhole_base::term::stderr_colour()))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_prefix(format!("cells 0/{cells}"));
        bar.enable_steady_tick(Duration::from_millis(250));
        let label = Arc::new(Mutex::new(String::new()));
        let log = log.and_then(|p| std::fs::OpenOptions::new().create(true).append(true).open(p).ok());
        let log = Arc::new(Mutex::new(log));
        let (b, l) = (bar.clone(), label.clone());
        // The runs' own progress lines go to matrix.log; a line naming a mode
        // ("legacy: topic … ready") moves the bar's "current mode".
        run::set_progress_sink(Some(Box::new(move |line: &str| {
            if let Some(f) = log.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
                use std::io::Write as _;
                let _ = writeln!(f, "{line}");
            }
            let head = line.split(':').next().unwrap_or("");
            if let Some(mode) = SinkMode::parse(head) {
                let cell = l.lock().unwrap_or_else(|p| p.into_inner()).clone();
                b.set_message(format!("{cell} {}", mode.name()));
            }
        })));
        Reporter::Bar { bar, label }
    }

    pub(super) fn cell_started(&self, i: usize, total: usize, c: &CellResult, done_modes: u64, total_modes: u64) {
        let label = format!("{} @{} seed {}", c.scenario, c.kafka, c.seed);
        match self {
            Reporter::Bar { bar, label: l } => {
                *l.lock().unwrap_or_else(|p| p.into_inner()) = label.clone();
                bar.set_prefix(format!("cells {i}/{total}"));
                bar.set_position(done_modes);
                bar.set_message(format!("{label} starting"));
            }
            Reporter::Lines { started } => {
                let el = started.elapsed().as_millis() as u64;
                let eta = el
                    .checked_div(done_modes)
                    .map(|per| format!(", eta ~{}", human_duration(per * total_modes.saturating_sub(done_modes))))
                    .unwrap_or_default();
                eprintln!(
                    "matrix: [{}/{total}] {label}: starting ({} modes); elapsed {}{eta}",
                    i + 1,
                    c.modes_planned.len(),
                    human_duration(el)
                );
            }
        }
    }

    pub(super) fn cell_finished(&self, i: usize, total: usize, c: &CellResult, done_modes: u64) {
        let what = match c.status {
            CellStatus::Done => c
                .modes
                .iter()
                .map(|m| format!("{} {}", m.mode.name(), cell_text(Some(m), c.status)))
                .collect::<Vec<_>>()
                .join(", "),
            _ => format!("{}: {}", c.status.name(), c.error.clone().unwrap_or_default()),
        };
        let line = format!(
            "matrix: [{}/{total}] {} @{} seed {}: {} in {} — {what}",
            i + 1,
            c.scenario,
            c.kafka,
            c.seed,
            c.status.name(),
            human_duration(c.wall_ms)
        );
        match self {
            Reporter::Bar { bar, .. } => {
                bar.set_prefix(format!("cells {}/{total}", i + 1));
                bar.set_position(done_modes);
                bar.println(line);
            }
            Reporter::Lines { .. } => eprintln!("{line}"),
        }
    }

    pub(super) fn finish(&self) {
        if let Reporter::Bar { bar, .. } = self {
            bar.finish_and_clear();
            run::set_progress_sink(None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_colour_the_bar_names_no_colour() {
        assert!(bar_template(true).contains("{bar:24.cyan/blue}"));
        let plain = bar_template(false);
        assert!(!plain.contains("cyan") && !plain.contains("blue") && plain.contains("{bar:24}"), "{plain}");
        // Both parse (a bad template would fall back to indicatif's default bar).
        ProgressStyle::with_template(bar_template(true)).unwrap();
        ProgressStyle::with_template(plain).unwrap();
    }
}
