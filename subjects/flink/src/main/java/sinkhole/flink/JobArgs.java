package sinkhole.flink;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The job's program arguments ({@code --name value}, as {@code programArgsList} of
 * {@code POST /jars/:id/run}). Parsed by hand rather than with Flink's ParameterTool, which
 * moved packages between Flink 1.20 and 2.x: the same source builds against both.
 *
 * <p>Every value the rig varies per scenario is here; nothing is read from the environment.
 */
public final class JobArgs implements Serializable {
    private static final long serialVersionUID = 1L;

    public String runId;
    public String bootstrap;
    public String topic;
    public int partitions = 1;
    public Records.Partitioning partitioning = Records.Partitioning.ROUND_ROBIN;
    /** The logical subtasks: the source's splits, each emitting {@link #records} records. */
    public int parallelism = 1;
    /**
     * The operators' parallelism for this submission, 0 = {@link #parallelism}. Lower on a
     * resubmission from a retained checkpoint, it is a downscale: the splits, the writers'
     * states and the committables of the restored checkpoint go to fewer subtasks.
     */
    public int operatorParallelism = 0;
    /**
     * A slow snapshot: the subtask of this index holds its snapshot of checkpoint
     * {@link #slowCheckpoint} for {@link #slowMs} ms (-1: none). See {@link CheckpointLog}.
     */
    public int slowSubtask = -1;
    public long slowCheckpoint = 0;
    public long slowMs = 0;
    /** Records per subtask: subtask s emits seq 0..records-1. */
    public long records = 1000;
    /** Records per second per subtask; 0 = unthrottled. */
    public double ratePerSubtask = 0;
    public String tidPrefix;
    public long transactionTimeoutMs = 60_000;
    /** INCREMENTING or POOLING (TransactionNamingStrategy, connector 4.0+). */
    public String naming = "INCREMENTING";
    public long checkpointIntervalMs = 1_000;
    public long checkpointTimeoutMs = 60_000;
    public int maxConcurrentCheckpoints = 1;
    public int restartAttempts = 3;
    public long restartDelayMs = 1_000;
    public String jobName;
    /** Extra producer settings ({@code --producer key=value}, repeatable). */
    public final Map<String, String> producer = new LinkedHashMap<>();

    public static JobArgs parse(String[] argv) {
        JobArgs a = new JobArgs();
        List<String> missing = new ArrayList<>();
        for (int i = 0; i < argv.length; i++) {
            String name = argv[i];
            if (!name.startsWith("--")) {
                throw new IllegalArgumentException("expected --name, got '" + name + "'");
            }
            if (i + 1 >= argv.length) {
                throw new IllegalArgumentException(name + " needs a value");
            }
            String v = argv[++i];
            switch (name.substring(2)) {
                case "run-id": a.runId = v; break;
                case "bootstrap": a.bootstrap = v; break;
                case "topic": a.topic = v; break;
                case "partitions": a.partitions = positiveInt(name, v); break;
                case "partitioning": a.partitioning = Records.Partitioning.parse(v); break;
                case "parallelism": a.parallelism = positiveInt(name, v); break;
                case "operator-parallelism": a.operatorParallelism = positiveInt(name, v); break;
                case "slow-snapshot": a.slowSnapshot(name, v); break;
                case "records": a.records = positiveLong(name, v); break;
                case "rate": a.ratePerSubtask = nonNegativeDouble(name, v); break;
                case "tid-prefix": a.tidPrefix = v; break;
                case "transaction-timeout-ms": a.transactionTimeoutMs = positiveLong(name, v); break;
                case "naming": a.naming = v.toUpperCase(Locale.ROOT); break;
                case "checkpoint-interval-ms": a.checkpointIntervalMs = positiveLong(name, v); break;
                case "checkpoint-timeout-ms": a.checkpointTimeoutMs = positiveLong(name, v); break;
                case "max-concurrent-checkpoints":
                    a.maxConcurrentCheckpoints = positiveInt(name, v);
                    break;
                case "restart-attempts": a.restartAttempts = (int) nonNegativeLong(name, v); break;
                case "restart-delay-ms": a.restartDelayMs = nonNegativeLong(name, v); break;
                case "job-name": a.jobName = v; break;
                case "producer": {
                    int eq = v.indexOf('=');
                    if (eq <= 0) {
                        throw new IllegalArgumentException("--producer wants key=value, got '" + v + "'");
                    }
                    a.producer.put(v.substring(0, eq), v.substring(eq + 1));
                    break;
                }
                default:
                    throw new IllegalArgumentException("unknown argument " + name);
            }
        }
        if (a.runId == null) missing.add("--run-id");
        if (a.bootstrap == null) missing.add("--bootstrap");
        if (a.topic == null) missing.add("--topic");
        if (a.tidPrefix == null) missing.add("--tid-prefix");
        if (!missing.isEmpty()) {
            throw new IllegalArgumentException("missing " + String.join(", ", missing));
        }
        if (!a.naming.equals("INCREMENTING") && !a.naming.equals("POOLING")) {
            throw new IllegalArgumentException(
                    "--naming: INCREMENTING or POOLING, got '" + a.naming + "'");
        }
        if (a.operatorParallelism > a.parallelism) {
            throw new IllegalArgumentException("--operator-parallelism " + a.operatorParallelism
                    + " is above --parallelism " + a.parallelism + ": a split would have no records");
        }
        if (a.slowSubtask >= a.parallelism) {
            throw new IllegalArgumentException("--slow-snapshot: no subtask " + a.slowSubtask
                    + " at parallelism " + a.parallelism);
        }
        if (a.jobName == null) {
            a.jobName = "sinkhole " + a.runId;
        }
        return a;
    }

    /** The operators' parallelism of this submission. */
    public int runParallelism() {
        return operatorParallelism > 0 ? operatorParallelism : parallelism;
    }

    /** {@code --slow-snapshot SUBTASK:CHECKPOINT:MS}. */
    private void slowSnapshot(String name, String v) {
        String[] p = v.split(":");
        if (p.length != 3) {
            throw new IllegalArgumentException(name + " wants SUBTASK:CHECKPOINT:MS, got '" + v + "'");
        }
        slowSubtask = (int) nonNegativeLong(name, p[0]);
        slowCheckpoint = positiveLong(name, p[1]);
        slowMs = positiveLong(name, p[2]);
    }

    private static int positiveInt(String name, String v) {
        long x = positiveLong(name, v);
        if (x > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(name + ": too large: " + v);
        }
        return (int) x;
    }

    private static long positiveLong(String name, String v) {
        long x = nonNegativeLong(name, v);
        if (x == 0) {
            throw new IllegalArgumentException(name + ": must be positive");
        }
        return x;
    }

    private static long nonNegativeLong(String name, String v) {
        try {
            long x = Long.parseLong(v);
            if (x < 0) {
                throw new IllegalArgumentException(name + ": must not be negative: " + v);
            }
            return x;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + ": not a number: " + v);
        }
    }

    private static double nonNegativeDouble(String name, String v) {
        try {
            double x = Double.parseDouble(v);
            if (!(x >= 0) || Double.isInfinite(x)) {
                throw new IllegalArgumentException(name + ": must be a finite number >= 0: " + v);
            }
            return x;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + ": not a number: " + v);
        }
    }
}
