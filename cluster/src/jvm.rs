//! The options of a broker JVM the rig starts, the same on the local and the containers
//! backends: the garbage collector settings Kafka's `kafka-run-class.sh` gives a broker, and the
//! JIT compilers the scenario chose ([`Jit`]; why the rig's default is C1 alone is said there).
//! The heap is the caller's (`-Xmx` from the spec, `-Xms128m`).
use sinkhole_scenario::Jit;

/// As `kafka-run-class.sh` runs a broker (`KAFKA_JVM_PERFORMANCE_OPTS`).
const GC: [&str; 6] = [
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
];

/// Every option of a broker JVM but its heap, class path and main class.
pub fn broker_options(jit: Jit) -> Vec<&'static str> {
    let mut out = GC.to_vec();
    if jit == Jit::C1 {
        out.push("-XX:TieredStopAtLevel=1");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c1_stops_at_the_first_tier_and_tiered_is_the_jvms_default() {
        assert!(broker_options(Jit::C1).contains(&"-XX:TieredStopAtLevel=1"));
        assert!(!broker_options(Jit::Tiered).iter().any(|o| o.contains("Tiered")));
        assert!(broker_options(Jit::Tiered).contains(&"-XX:+UseG1GC"));
    }
}
