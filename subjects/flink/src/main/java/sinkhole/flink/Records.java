package sinkhole.flink;

import java.nio.charset.StandardCharsets;
import java.time.Instant;

/**
 * The records the rig's own source writes (workloads/src/source.rs and the {@code record}
 * module of workloads/src/model.rs), byte for byte: the checker reads Flink's output with
 * the same code as the rig's own.
 *
 * <p>Everything but the produce time is a function of (run, subtask, seq, partitions,
 * partitioning), so a source restored from a checkpoint re-emits identical keys, values and
 * partitions, and a record seen twice in the output is a duplicate.
 */
public final class Records {
    public static final String H_RUN = "sinkhole.run";
    public static final String H_SUBTASK = "sinkhole.subtask";
    public static final String H_SEQ = "sinkhole.seq";
    /** Produce time, Unix microseconds. */
    public static final String H_TIME_US = "sinkhole.produced_us";
    /**
     * The transactional id carrying the record. The rig's own sink writes it; KafkaSink does
     * not tell its record serializer which transaction (producer) a record goes to, so this
     * job cannot write it (see {@link SinkholeSerializer}).
     */
    public static final String H_TID = "sinkhole.tid";

    private Records() {}

    /** {@code "{subtask}-{seq}"}. */
    public static String key(int subtask, long seq) {
        return subtask + "-" + seq;
    }

    /** {@code "{run_id}:{subtask}:{seq}"}: attributable even if headers were stripped. */
    public static String value(String runId, int subtask, long seq) {
        return runId + ":" + subtask + ":" + seq;
    }

    public static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Unix time in microseconds (Instant.now() has microsecond resolution on Linux). */
    public static long unixMicros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000L;
    }

    /** How records are spread over partitions: the rig's {@code Partitioning}. */
    public enum Partitioning {
        /** seq modulo partitions. */
        ROUND_ROBIN("round-robin"),
        /** Every record of subtask s to partition s modulo partitions. */
        BY_SUBTASK("by-subtask"),
        /** FNV-1a 64 of (subtask as 4 big-endian bytes, seq as 8 big-endian bytes). */
        HASH("hash");

        public final String yamlName;

        Partitioning(String yamlName) {
            this.yamlName = yamlName;
        }

        public static Partitioning parse(String s) {
            for (Partitioning p : values()) {
                if (p.yamlName.equals(s)) {
                    return p;
                }
            }
            throw new IllegalArgumentException(
                    "unknown partitioning '" + s + "' (round-robin, by-subtask, hash)");
        }
    }

    /** Which partition record (subtask, seq) goes to: {@code partition_for} in source.rs. */
    public static int partitionFor(Partitioning p, int partitions, int subtask, long seq) {
        long n = Math.max(1, partitions);
        switch (p) {
            case ROUND_ROBIN:
                return (int) Long.remainderUnsigned(seq, n);
            case BY_SUBTASK:
                return (int) Long.remainderUnsigned(Integer.toUnsignedLong(subtask), n);
            case HASH:
            default:
                return (int) Long.remainderUnsigned(fnv1a64(subtask, seq), n);
        }
    }

    /** FNV-1a (64 bit) over subtask (u32 big-endian) then seq (u64 big-endian). */
    static long fnv1a64(int subtask, long seq) {
        long h = 0xcbf29ce484222325L;
        for (int i = 3; i >= 0; i--) {
            h ^= (subtask >>> (8 * i)) & 0xff;
            h *= 0x00000100000001b3L;
        }
        for (int i = 7; i >= 0; i--) {
            h ^= (seq >>> (8 * i)) & 0xff;
            h *= 0x00000100000001b3L;
        }
        return h;
    }
}
