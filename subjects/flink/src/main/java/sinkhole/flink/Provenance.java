package sinkhole.flink;

import java.io.InputStream;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.CodeSource;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * Where the classes under test were loaded from: the jar (path and SHA-256) of the connector's
 * KafkaSink and of the Kafka client's KafkaProducer, as seen by the class loader that runs the
 * job's code. The rig matches these lines against the jar it put on the cluster's classpath.
 */
public final class Provenance {
    static final String[] CLASSES = {
        "org.apache.flink.connector.kafka.sink.KafkaSink",
        "org.apache.kafka.clients.producer.KafkaProducer",
    };

    private Provenance() {}

    public static List<String> lines() {
        List<String> out = new ArrayList<>();
        for (String name : CLASSES) {
            out.add(describe(name));
        }
        return out;
    }

    static String describe(String className) {
        try {
            Class<?> c = Class.forName(className, false, Provenance.class.getClassLoader());
            CodeSource cs = c.getProtectionDomain().getCodeSource();
            URL url = cs == null ? null : cs.getLocation();
            if (url == null) {
                return "class=" + className + " jar=unknown";
            }
            String sha = "unknown";
            if ("file".equals(url.getProtocol())) {
                sha = sha256(Paths.get(url.toURI()));
            }
            return "class=" + className + " jar=" + url + " sha256=" + sha;
        } catch (ClassNotFoundException e) {
            return "class=" + className + " jar=missing";
        } catch (Exception e) {
            return "class=" + className + " jar=error " + e;
        }
    }

    static String sha256(Path p) throws Exception {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        try (InputStream in = Files.newInputStream(p)) {
            byte[] buf = new byte[1 << 16];
            int n;
            while ((n = in.read(buf)) > 0) {
                md.update(buf, 0, n);
            }
        }
        return HexFormat.of().formatHex(md.digest());
    }
}
