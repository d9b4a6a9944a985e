package sinkhole.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;

import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;

class RecordsTest {
    @Test
    void keyAndValueAreTheRigsFormat() {
        assertEquals("3-42", Records.key(3, 42));
        assertEquals("run:x:3:42", Records.value("run:x", 3, 42));
    }

    @Test
    void partitioningMatchesTheRigsSource() {
        assertEquals(3, Records.partitionFor(Records.Partitioning.ROUND_ROBIN, 4, 9, 7));
        assertEquals(1, Records.partitionFor(Records.Partitioning.BY_SUBTASK, 4, 9, 7));
        assertEquals(0, Records.partitionFor(Records.Partitioning.ROUND_ROBIN, 0, 9, 7));
        // Reference values computed independently (FNV-1a 64 over u32 BE subtask, u64 BE seq).
        assertEquals(6082024272624116885L, Records.fnv1a64(0, 0));
        assertEquals(Long.parseUnsignedLong("11108321725970874537"), Records.fnv1a64(3, 7));
        assertEquals(6, Records.partitionFor(Records.Partitioning.HASH, 7, 3, 7));
        assertEquals(9, Records.partitionFor(Records.Partitioning.HASH, 12, 3, 7));
        assertEquals(3, Records.partitionFor(Records.Partitioning.HASH, 7, 1, 123456789));
        // Unsigned arithmetic all the way: the largest subtask and seq stay in range.
        assertEquals(2, Records.partitionFor(Records.Partitioning.HASH, 7, -1, -1L));
    }

    @Test
    void partitioningNamesAreTheScenarioNames() {
        for (Records.Partitioning p : Records.Partitioning.values()) {
            assertEquals(p, Records.Partitioning.parse(p.yamlName));
        }
        assertThrows(IllegalArgumentException.class, () -> Records.Partitioning.parse("random"));
    }

    @Test
    void generatorSplitsTheIndexIntoSubtaskAndSeq() {
        RecordGenerator g = new RecordGenerator(100);
        SinkholeRecord r = g.map(250L);
        assertEquals(2, r.subtask);
        assertEquals(50, r.seq);
        assertTrue(r.producedUs > 1_600_000_000_000_000L, "produce time in Unix µs");
        assertThrows(IllegalArgumentException.class, () -> new RecordGenerator(0));
    }

    @Test
    void serializerWritesKeyValuePartitionAndHeaders() {
        SinkholeSerializer s = new SinkholeSerializer("run-1", "out", 4, Records.Partitioning.ROUND_ROBIN);
        ProducerRecord<byte[], byte[]> pr = s.toProducerRecord(new SinkholeRecord(3, 7, 1700000000123456L));
        assertEquals("out", pr.topic());
        assertEquals(3, pr.partition());
        assertEquals("3-7", new String(pr.key(), StandardCharsets.UTF_8));
        assertEquals("run-1:3:7", new String(pr.value(), StandardCharsets.UTF_8));
        assertEquals("run-1", header(pr, Records.H_RUN));
        assertEquals("3", header(pr, Records.H_SUBTASK));
        assertEquals("7", header(pr, Records.H_SEQ));
        assertEquals("1700000000123456", header(pr, Records.H_TIME_US));
        assertEquals(null, pr.headers().lastHeader(Records.H_TID));
        assertEquals(List.of("out"), s.getKafkaDatasetFacet().get().getTopicIdentifier().getTopics());
    }

    private static String header(ProducerRecord<byte[], byte[]> pr, String name) {
        return new String(pr.headers().lastHeader(name).value(), StandardCharsets.UTF_8);
    }
}
