package sinkhole.flink;

import java.lang.reflect.Method;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.sink.KafkaSinkBuilder;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Flink subject: a deterministic, checkpointed, bounded source (the rig's records) into
 * flink-connector-kafka's KafkaSink with DeliveryGuarantee.EXACTLY_ONCE.
 *
 * <p>Submitted to a session cluster through the REST API (POST /jars/upload, then
 * POST /jars/:id/run with programArgsList); resumed after a job outage with the run request's
 * savepointPath set to a retained checkpoint (chk-N). Program arguments: {@link JobArgs}.
 *
 * <p>Checkpointing and the restart strategy are set as configuration keys rather than through
 * CheckpointConfig/RestartStrategies, whose methods changed between Flink 1.20 and 2.x; the
 * keys below are read by both.
 */
public final class SinkholeJob {
    private static final Logger LOG = LoggerFactory.getLogger(SinkholeJob.class);

    /** The operators' uids: state in a checkpoint is matched to operators by these. */
    public static final String SOURCE_UID = "sinkhole-source";
    public static final String SINK_UID = "sinkhole-kafka-sink";
    public static final String CHECKPOINT_LOG_UID = "sinkhole-checkpoint-log";

    private SinkholeJob() {}

    public static void main(String[] argv) throws Exception {
        JobArgs a = JobArgs.parse(argv);
        for (String line : Provenance.lines()) {
            LOG.info("sinkhole provenance (client): {}", line);
        }

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.configure(Configuration.fromMap(jobConfig(a)));
        env.setParallelism(a.runParallelism());

        DataGeneratorSource<SinkholeRecord> source =
                new DataGeneratorSource<>(
                        new RecordGenerator(a.records),
                        a.records * a.parallelism,
                        rate(a),
                        TypeInformation.of(SinkholeRecord.class));

        KafkaSink<SinkholeRecord> sink = sink(a);

        env.fromSource(source, WatermarkStrategy.noWatermarks(), "sinkhole-source")
                .uid(SOURCE_UID)
                // Chained between source and writer: logs each checkpoint's records per subtask.
                .map(new CheckpointLog(a.slowSubtask, a.slowCheckpoint, a.slowMs))
                .name("sinkhole-checkpoint-log")
                .uid(CHECKPOINT_LOG_UID)
                .sinkTo(sink)
                .name("sinkhole-kafka-sink")
                .uid(SINK_UID);

        env.execute(a.jobName);
    }

    /** Checkpointing (exactly-once, retained on cancellation) and the restart strategy. */
    static Map<String, String> jobConfig(JobArgs a) {
        Map<String, String> c = new LinkedHashMap<>();
        c.put("execution.checkpointing.interval", a.checkpointIntervalMs + " ms");
        c.put("execution.checkpointing.mode", "EXACTLY_ONCE");
        c.put("execution.checkpointing.timeout", a.checkpointTimeoutMs + " ms");
        c.put("execution.checkpointing.max-concurrent-checkpoints", Integer.toString(a.maxConcurrentCheckpoints));
        // A job outage is resumed from the latest chk-N: it must survive cancellation too.
        c.put("execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION");
        c.put("restart-strategy.type", "fixed-delay");
        c.put("restart-strategy.fixed-delay.attempts", Integer.toString(a.restartAttempts));
        c.put("restart-strategy.fixed-delay.delay", a.restartDelayMs + " ms");
        return c;
    }

    /**
     * DataGeneratorSource's rate is for the whole source: RateLimiterStrategy.perSecond(r)
     * gives each of the P readers r / P, so the per-subtask rate is multiplied by P (the
     * logical subtasks: after a downscale the fewer readers share the same total).
     */
    @SuppressWarnings("rawtypes")
    static RateLimiterStrategy rate(JobArgs a) {
        if (a.ratePerSubtask <= 0) {
            return RateLimiterStrategy.noOp();
        }
        return RateLimiterStrategy.perSecond(a.ratePerSubtask * a.parallelism);
    }

    static Properties producerConfig(JobArgs a) {
        Properties p = new Properties();
        p.putAll(a.producer);
        // KafkaSinkBuilder defaults to one hour; the scenario's value is what the broker's
        // transaction timeout (and so FLIP-319's window) is measured against.
        p.setProperty("transaction.timeout.ms", Long.toString(a.transactionTimeoutMs));
        return p;
    }

    static KafkaSink<SinkholeRecord> sink(JobArgs a) {
        KafkaSinkBuilder<SinkholeRecord> b =
                KafkaSink.<SinkholeRecord>builder()
                        .setBootstrapServers(a.bootstrap)
                        .setKafkaProducerConfig(producerConfig(a))
                        .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                        .setTransactionalIdPrefix(a.tidPrefix)
                        .setRecordSerializer(
                                new SinkholeSerializer(a.runId, a.topic, a.partitions, a.partitioning));
        setNamingStrategy(b, a.naming);
        return b.build();
    }

    /**
     * TransactionNamingStrategy exists from connector 4.0 on; through reflection the same
     * source builds against 3.x, whose only naming is {prefix}-{subtask}-{checkpoint}
     * (what 4.0 calls INCREMENTING). Asking such a connector for POOLING is an error, not a
     * silent fallback.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static void setNamingStrategy(KafkaSinkBuilder<?> b, String naming) {
        Class<? extends Enum> strategy;
        try {
            strategy = (Class<? extends Enum>) Class.forName(
                    "org.apache.flink.connector.kafka.sink.TransactionNamingStrategy",
                    true,
                    KafkaSinkBuilder.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            if (naming.equals("INCREMENTING")) {
                LOG.info("connector has no TransactionNamingStrategy: its one naming is INCREMENTING's");
                return;
            }
            throw new IllegalArgumentException(
                    "naming " + naming + ": this connector has no TransactionNamingStrategy (connector 4.0+)");
        }
        try {
            Method set = b.getClass().getMethod("setTransactionNamingStrategy", strategy);
            set.invoke(b, Enum.valueOf(strategy, naming));
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot set TransactionNamingStrategy " + naming, e);
        }
    }
}
