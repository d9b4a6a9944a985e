package sinkhole.flink;

import java.util.List;
import java.util.Optional;

import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.connector.kafka.lineage.DefaultKafkaDatasetFacet;
import org.apache.flink.connector.kafka.lineage.DefaultKafkaDatasetIdentifier;
import org.apache.flink.connector.kafka.lineage.KafkaDatasetFacet;
import org.apache.flink.connector.kafka.lineage.KafkaDatasetFacetProvider;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns a {@link SinkholeRecord} into the rig's Kafka record: key, value, explicit partition
 * and the run, subtask, seq and produce-time headers.
 *
 * <p>No {@code sinkhole.tid} header: KafkaSink's writer picks the transactional producer and
 * hands this schema only a KafkaSinkContext (subtask index, parallelism, partitions), never
 * the producer or its transactional id; with the connector's producer pool a producer is also
 * renamed (setTransactionId) between transactions, so not even a producer interceptor, which
 * is configured once per producer, would see the right id. The transactional id of a record
 * is in the Produce request that carries it (the proxy's view).
 *
 * <p>Implements KafkaDatasetFacetProvider because the POOLING naming strategy needs the
 * serializer to name its topics (KafkaSinkBuilder's sanity check); harmless for INCREMENTING.
 *
 * <p>{@link #open} logs which jar the connector's and Kafka client's classes came from, with
 * its SHA-256: on the TaskManager, since the writer opens the schema there.
 */
public final class SinkholeSerializer
        implements KafkaRecordSerializationSchema<SinkholeRecord>, KafkaDatasetFacetProvider {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(SinkholeSerializer.class);

    private final String runId;
    private final String topic;
    private final int partitions;
    private final Records.Partitioning partitioning;

    public SinkholeSerializer(
            String runId, String topic, int partitions, Records.Partitioning partitioning) {
        this.runId = runId;
        this.topic = topic;
        this.partitions = partitions;
        this.partitioning = partitioning;
    }

    @Override
    public void open(
            SerializationSchema.InitializationContext context, KafkaSinkContext sinkContext) {
        for (String line : Provenance.lines()) {
            LOG.info("sinkhole provenance (subtask {}): {}", sinkContext.getParallelInstanceId(), line);
        }
    }

    @Override
    public ProducerRecord<byte[], byte[]> serialize(
            SinkholeRecord r, KafkaSinkContext context, Long timestamp) {
        return toProducerRecord(r);
    }

    ProducerRecord<byte[], byte[]> toProducerRecord(SinkholeRecord r) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(new RecordHeader(Records.H_RUN, Records.utf8(runId)));
        headers.add(new RecordHeader(Records.H_SUBTASK, Records.utf8(Integer.toString(r.subtask))));
        headers.add(new RecordHeader(Records.H_SEQ, Records.utf8(Long.toString(r.seq))));
        headers.add(new RecordHeader(Records.H_TIME_US, Records.utf8(Long.toString(r.producedUs))));
        return new ProducerRecord<>(
                topic,
                Records.partitionFor(partitioning, partitions, r.subtask, r.seq),
                null,
                Records.utf8(Records.key(r.subtask, r.seq)),
                Records.utf8(Records.value(runId, r.subtask, r.seq)),
                headers);
    }

    @Override
    public Optional<KafkaDatasetFacet> getKafkaDatasetFacet() {
        return Optional.of(new DefaultKafkaDatasetFacet(DefaultKafkaDatasetIdentifier.ofTopics(List.of(topic))));
    }
}
