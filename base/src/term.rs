//! Whether the rig's output on a stream may carry colour codes: only on a
//! terminal, and never while `NO_COLOR` is set to a non-empty value (the
//! NO_COLOR convention: present and not empty means no colour; an empty value
//! counts as unset). Every place that picks colour asks here — the log lines
//! on stderr and the matrix's progress bar — so one variable turns it all off.
use std::ffi::OsStr;
use std::io::IsTerminal;

/// The environment variable that turns colour off.
pub const NO_COLOR: &str = "NO_COLOR";

/// The decision itself, on plain inputs: `no_color` is the value of
/// [`NO_COLOR`], if set.
pub fn colour(is_terminal: bool, no_color: Option<&OsStr>) -> bool {
    is_terminal && no_color.is_none_or(OsStr::is_empty)
}

/// Whether output on stderr may be coloured.
pub fn stderr_colour() -> bool {
    colour(std::io::stderr().is_terminal(), std::env::var_os(NO_COLOR).as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_on_a_terminal_without_a_non_empty_no_color() {
        assert!(colour(true, None));
        assert!(colour(true, Some(OsStr::new(""))), "an empty NO_COLOR counts as unset");
        assert!(!colour(true, Some(OsStr::new("1"))));
        assert!(!colour(true, Some(OsStr::new("0"))), "any non-empty value, even 0");
        assert!(!colour(false, None));
        assert!(!colour(false, Some(OsStr::new(""))));
    }
}
