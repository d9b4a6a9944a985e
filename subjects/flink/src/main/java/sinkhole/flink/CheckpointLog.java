package sinkhole.flink;

import java.util.Map;
import java.util.TreeMap;

import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A pass-through operator between the source and KafkaSink that logs, at every checkpoint,
 * which records each subtask handed to the sink since the previous one: the rig turns these
 * lines into the history's pre-committed ranges, so a lost range is tied to the checkpoint
 * whose transaction carried it.
 *
 * <p>It is chained with the source and the sink's writer (forward, same parallelism), so it
 * runs on the task thread that also runs KafkaWriter. A checkpoint barrier reaches the chain
 * between two records: KafkaWriter's prepareCommit (in prepareSnapshotPreBarrier) closes the
 * transaction with exactly the records before the barrier, and this operator's snapshotState
 * for the same checkpoint sees exactly those records since the last one. With the
 * INCREMENTING naming that transaction is {prefix}-{subtask}-{checkpoint}.
 *
 * <p>Line format (logger {@code sinkhole.flink.CheckpointLog}, INFO):
 * <pre>
 *   sinkhole checkpoint N subtask I source S first_seq A next_seq K records C
 *   sinkhole checkpoint N subtask I records 0
 *   sinkhole restore subtask I checkpoint N
 * </pre>
 * where I is the task's subtask index (the writer's, which names the transaction) and S the
 * logical subtask of the records (the source split's); a subtask normally sees one S, and
 * after a downscale it can see several.
 *
 * <p>A slow snapshot ({@code --slow-snapshot S:N:MS}): subtask S sleeps MS ms in its
 * snapshotState of checkpoint N, before its line, and logs
 * {@code sinkhole slow snapshot subtask S checkpoint N held MS ms} when it goes on. Chained
 * operators snapshot from the tail (OperatorChain.snapshotState), so S's writer has already
 * prepared N's transaction and opened the next one, and every other subtask acknowledges N
 * as usual: checkpoint N stays pending on the JobManager for MS ms with the next
 * transactions open. That is how a subtask with a slow state backend holds a checkpoint; a
 * fault aimed at "N snapshotted but not complete" (FLINK-40626's window) gets MS ms of it.
 */
public final class CheckpointLog extends RichMapFunction<SinkholeRecord, SinkholeRecord>
        implements CheckpointedFunction {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(CheckpointLog.class);

    private final int slowSubtask;
    private final long slowCheckpoint;
    private final long slowMs;

    /** Logical subtask → {first seq, last seq, count} since the last checkpoint. */
    private transient Map<Integer, long[]> seen;

    public CheckpointLog() {
        this(-1, 0, 0);
    }

    /** With a slow snapshot of checkpoint {@code checkpoint} on {@code subtask} (-1: none). */
    public CheckpointLog(int subtask, long checkpoint, long ms) {
        this.slowSubtask = subtask;
        this.slowCheckpoint = checkpoint;
        this.slowMs = ms;
    }

    /** Whether this subtask's snapshot of checkpoint {@code n} is the slow one. */
    boolean slow(long n, int subtask) {
        return slowSubtask >= 0 && subtask == slowSubtask && n == slowCheckpoint && slowMs > 0;
    }

    @Override
    public SinkholeRecord map(SinkholeRecord r) {
        long[] range = seen().get(r.subtask);
        if (range == null) {
            seen().put(r.subtask, new long[] {r.seq, r.seq, 1});
        } else {
            range[0] = Math.min(range[0], r.seq);
            range[1] = Math.max(range[1], r.seq);
            range[2]++;
        }
        return r;
    }

    private Map<Integer, long[]> seen() {
        if (seen == null) {
            seen = new TreeMap<>();
        }
        return seen;
    }

    private int subtask() {
        return getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
    }

    @Override
    public void snapshotState(FunctionSnapshotContext context) throws InterruptedException {
        long n = context.getCheckpointId();
        if (slow(n, subtask())) {
            Thread.sleep(slowMs);
            LOG.info("sinkhole slow snapshot subtask {} checkpoint {} held {} ms", subtask(), n, slowMs);
        }
        if (seen().isEmpty()) {
            LOG.info("{}", line(n, subtask(), null, null));
        }
        for (Map.Entry<Integer, long[]> e : seen().entrySet()) {
            LOG.info("{}", line(n, subtask(), e.getKey(), e.getValue()));
        }
        seen().clear();
    }

    /** One line of the format above; {@code source} null: nothing since the last checkpoint. */
    static String line(long checkpoint, int subtask, Integer source, long[] range) {
        if (source == null) {
            return "sinkhole checkpoint " + checkpoint + " subtask " + subtask + " records 0";
        }
        return "sinkhole checkpoint " + checkpoint + " subtask " + subtask + " source " + source
                + " first_seq " + range[0] + " next_seq " + (range[1] + 1) + " records " + range[2];
    }

    @Override
    public void initializeState(FunctionInitializationContext context) {
        seen().clear();
        if (context.isRestored()) {
            String from = context.getRestoredCheckpointId().isPresent()
                    ? Long.toString(context.getRestoredCheckpointId().getAsLong())
                    : "unknown";
            LOG.info("sinkhole restore subtask {} checkpoint {}", subtask(), from);
        }
    }
}
