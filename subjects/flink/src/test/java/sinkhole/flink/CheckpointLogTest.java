package sinkhole.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class CheckpointLogTest {
    /** The rig parses exactly these lines (rig/src/subject/flink/logs.rs). */
    @Test
    void linesAreTheFormatTheRigParses() {
        assertEquals(
                "sinkhole checkpoint 4 subtask 1 source 0 first_seq 632 next_seq 832 records 200",
                CheckpointLog.line(4, 1, 0, new long[] {632, 831, 200}));
        assertEquals("sinkhole checkpoint 9 subtask 0 records 0", CheckpointLog.line(9, 0, null, null));
    }

    @Test
    void mapPassesRecordsThroughAndTracksTheirRange() {
        CheckpointLog log = new CheckpointLog();
        SinkholeRecord a = new SinkholeRecord(1, 10, 0);
        assertEquals(a, log.map(a));
        log.map(new SinkholeRecord(1, 12, 0));
        log.map(new SinkholeRecord(1, 11, 0));
        // What snapshotState would log for logical subtask 1.
        assertEquals(
                "sinkhole checkpoint 2 subtask 0 source 1 first_seq 10 next_seq 13 records 3",
                CheckpointLog.line(2, 0, 1, new long[] {10, 12, 3}));
    }

    @Test
    void onlyTheNamedSubtasksSnapshotOfTheNamedCheckpointIsSlow() {
        CheckpointLog log = new CheckpointLog(0, 4, 5000);
        assertTrue(log.slow(4, 0));
        assertFalse(log.slow(4, 1));
        assertFalse(log.slow(3, 0));
        assertFalse(log.slow(5, 0));
        assertFalse(new CheckpointLog().slow(4, 0));
    }
}
