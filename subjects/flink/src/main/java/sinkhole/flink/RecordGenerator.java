package sinkhole.flink;

import org.apache.flink.connector.datagen.source.GeneratorFunction;

/**
 * Maps DataGeneratorSource's index to the rig's (subtask, seq): index i is record
 * seq = i mod N of logical subtask s = i div N, for N records per subtask.
 *
 * <p>DataGeneratorSource (flink-connector-datagen) runs on NumberSequenceSource: the index
 * range 0..P*N-1 is cut into P contiguous splits, and a split's checkpointed state is the next
 * index it would emit, so a restore resumes exactly at the checkpoint and re-emits the same
 * (s, seq) from there. The logical subtask s is the split's, which is not necessarily the
 * index of the reader that runs it (splits are handed to readers in request order); keys stay
 * unique either way, and the checker counts per (s, seq).
 */
public final class RecordGenerator implements GeneratorFunction<Long, SinkholeRecord> {
    private static final long serialVersionUID = 1L;

    private final long recordsPerSubtask;

    public RecordGenerator(long recordsPerSubtask) {
        if (recordsPerSubtask <= 0) {
            throw new IllegalArgumentException("records per subtask must be positive");
        }
        this.recordsPerSubtask = recordsPerSubtask;
    }

    @Override
    public SinkholeRecord map(Long index) {
        long i = index;
        return new SinkholeRecord(
                (int) (i / recordsPerSubtask), i % recordsPerSubtask, Records.unixMicros());
    }
}
