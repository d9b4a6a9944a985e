package sinkhole.flink;

/**
 * One emitted record: a Flink POJO (public fields, no-arg constructor) so it travels between
 * chained or unchained operators without Kryo.
 */
public class SinkholeRecord {
    public int subtask;
    public long seq;
    /** When the source emitted it (Unix µs): the rig's {@code sinkhole.produced_us}. */
    public long producedUs;

    public SinkholeRecord() {}

    public SinkholeRecord(int subtask, long seq, long producedUs) {
        this.subtask = subtask;
        this.seq = seq;
        this.producedUs = producedUs;
    }

    @Override
    public String toString() {
        return "SinkholeRecord{" + subtask + "-" + seq + " @" + producedUs + "}";
    }
}
