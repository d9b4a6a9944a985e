package sinkhole.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;

import org.junit.jupiter.api.Test;

class JobArgsTest {
    private static final String[] REQUIRED = {
        "--run-id", "r1", "--bootstrap", "127.0.0.1:9092", "--topic", "out", "--tid-prefix", "sh-r1",
    };

    private static String[] with(String... more) {
        String[] all = new String[REQUIRED.length + more.length];
        System.arraycopy(REQUIRED, 0, all, 0, REQUIRED.length);
        System.arraycopy(more, 0, all, REQUIRED.length, more.length);
        return all;
    }

    @Test
    void parsesEveryArgument() {
        JobArgs a = JobArgs.parse(with(
                "--partitions", "3", "--partitioning", "hash", "--parallelism", "2",
                "--records", "500", "--rate", "50.5", "--transaction-timeout-ms", "10000",
                "--naming", "pooling", "--checkpoint-interval-ms", "700",
                "--checkpoint-timeout-ms", "9000", "--max-concurrent-checkpoints", "2",
                "--restart-attempts", "0", "--restart-delay-ms", "250", "--job-name", "j",
                "--producer", "linger.ms=5", "--producer", "a=b=c"));
        assertEquals("r1", a.runId);
        assertEquals(3, a.partitions);
        assertEquals(Records.Partitioning.HASH, a.partitioning);
        assertEquals(2, a.parallelism);
        assertEquals(500, a.records);
        assertEquals(50.5, a.ratePerSubtask);
        assertEquals(10000, a.transactionTimeoutMs);
        assertEquals("POOLING", a.naming);
        assertEquals(700, a.checkpointIntervalMs);
        assertEquals(9000, a.checkpointTimeoutMs);
        assertEquals(2, a.maxConcurrentCheckpoints);
        assertEquals(0, a.restartAttempts);
        assertEquals(250, a.restartDelayMs);
        assertEquals("j", a.jobName);
        assertEquals(Map.of("linger.ms", "5", "a", "b=c"), a.producer);
    }

    @Test
    void defaultsAndJobName() {
        JobArgs a = JobArgs.parse(REQUIRED);
        assertEquals("INCREMENTING", a.naming);
        assertEquals("sinkhole r1", a.jobName);
        assertEquals(1, a.maxConcurrentCheckpoints);
    }

    @Test
    void aDownscaledResubmissionAndASlowSnapshot() {
        JobArgs a = JobArgs.parse(with("--parallelism", "2", "--operator-parallelism", "1",
                "--slow-snapshot", "0:4:5000"));
        assertEquals(2, a.parallelism);
        assertEquals(1, a.runParallelism());
        assertEquals(0, a.slowSubtask);
        assertEquals(4, a.slowCheckpoint);
        assertEquals(5000, a.slowMs);
        JobArgs d = JobArgs.parse(with("--parallelism", "3"));
        assertEquals(3, d.runParallelism());
        assertEquals(-1, d.slowSubtask);
        assertThrows(IllegalArgumentException.class,
                () -> JobArgs.parse(with("--parallelism", "1", "--operator-parallelism", "2")));
        assertThrows(IllegalArgumentException.class,
                () -> JobArgs.parse(with("--parallelism", "2", "--slow-snapshot", "2:4:5000")));
        assertThrows(IllegalArgumentException.class, () -> JobArgs.parse(with("--slow-snapshot", "0:4")));
        assertThrows(IllegalArgumentException.class, () -> JobArgs.parse(with("--slow-snapshot", "0:0:10")));
    }

    @Test
    void rejectsBadArguments() {
        assertThrows(IllegalArgumentException.class, () -> JobArgs.parse(new String[] {"--run-id", "x"}));
        assertThrows(IllegalArgumentException.class, () -> JobArgs.parse(with("--naming", "random")));
        assertThrows(IllegalArgumentException.class, () -> JobArgs.parse(with("--records", "0")));
        assertThrows(IllegalArgumentException.class, () -> JobArgs.parse(with("--rate", "-1")));
        assertThrows(IllegalArgumentException.class, () -> JobArgs.parse(with("--bogus", "1")));
        assertThrows(IllegalArgumentException.class, () -> JobArgs.parse(with("--producer", "novalue")));
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> JobArgs.parse(with("--parallelism")));
        assertTrue(e.getMessage().contains("needs a value"), e.getMessage());
    }

    @Test
    void jobConfigRetainsCheckpointsAndSetsTheRestartStrategy() {
        JobArgs a = JobArgs.parse(with("--checkpoint-interval-ms", "700", "--restart-attempts", "5"));
        Map<String, String> c = SinkholeJob.jobConfig(a);
        assertEquals("700 ms", c.get("execution.checkpointing.interval"));
        assertEquals("RETAIN_ON_CANCELLATION", c.get("execution.checkpointing.externalized-checkpoint-retention"));
        assertEquals("fixed-delay", c.get("restart-strategy.type"));
        assertEquals("5", c.get("restart-strategy.fixed-delay.attempts"));
        assertEquals("10000", SinkholeJob.producerConfig(JobArgs.parse(with("--transaction-timeout-ms", "10000")))
                .getProperty("transaction.timeout.ms"));
    }

    @Test
    void namingStrategyIsSetOnTheBuilderWhereTheConnectorHasIt() {
        // Builds a real KafkaSink (no connection is made until the job runs). The test runs
        // against whichever connector the build's connector.version names.
        SinkholeJob.sink(JobArgs.parse(REQUIRED));
        JobArgs pooling = JobArgs.parse(with("--naming", "POOLING"));
        if (hasNamingStrategy()) {
            SinkholeJob.sink(pooling);
        } else {
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> SinkholeJob.sink(pooling));
            assertTrue(e.getMessage().contains("no TransactionNamingStrategy"), e.getMessage());
        }
    }

    private static boolean hasNamingStrategy() {
        try {
            Class.forName("org.apache.flink.connector.kafka.sink.TransactionNamingStrategy");
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }
}
