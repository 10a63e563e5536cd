package mongomq.testserver;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;

import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.backend.AbstractMongoBackend;
import de.bwaldvogel.mongo.backend.h2.H2Backend;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.wire.message.MongoMessage;

/**
 * Local MongoDB-wire test server for mongomq: mongo-java-server with the
 * in-memory backend.
 *
 * Usage: java -jar mongomq-test-server.jar [--host 127.0.0.1] [--port N] [--oplog] [--h2 FILE]
 *
 * --h2 FILE keeps the data in an H2 MVStore file instead of memory, committed after
 * every command (so a SIGKILL loses no answered write), and reopens it on the next
 * start: the crash-and-restart tests (tests/faults/restart.sh).
 *
 * --tls-key KEY --tls-cert CERT serves TLS only (PEM files: an unencrypted PKCS#8 RSA
 * or EC key, the certificate): tests/faults/tls.sh.
 *
 * A write whose writeConcern is {w: "mongomq-test-wcerror"} (a tag no server defines)
 * is applied and answered with a writeConcernError (64, WriteConcernFailed), as a
 * replica set answers a write that timed out waiting for its majority: the library's
 * handling of that reply is tested against the server's own answer
 * (tests/test_deploy.c). On a real replica set the unknown tag gives a
 * writeConcernError too (79, UnknownReplWriteConcern), so the same test holds there.
 *
 * A step-down after the write, on demand: an insert carrying a document whose
 * dedup_key (a string, or the "key" of a {group, key} document) starts with
 * "mongomq-test-stepdown-" is applied and then, the first time the server sees that
 * key, answered with error 10107 (NotWritablePrimary), as a primary that stepped down
 * right after applying a write answers: the write's outcome is unknown to the client.
 * The bindings' CONTRACT scenario dedup_retry_after_lost_reply runs on it (a real
 * MongoDB never answers so on purpose; there the C lost-reply suite's fault hook is
 * the test).
 *
 * --port 0 (the default) lets the OS pick a free port. Once listening, exactly
 * one line "mongodb://HOST:PORT" is printed to stdout; then the process blocks
 * until it is killed.
 */
public final class Main {

    private Main() {
    }

    static final String WCERROR_TAG = "mongomq-test-wcerror";

    /** The reply to a command, with a writeConcernError when it asked for WCERROR_TAG. */
    static Document withWriteConcernError(MongoMessage message, Document reply) {
        Object wc = message.getDocument().get("writeConcern");
        if (!(wc instanceof Document) || !WCERROR_TAG.equals(((Document) wc).get("w")) || reply == null) {
            return reply;
        }
        Object ok = reply.get("ok");
        if (!(ok instanceof Number) || ((Number) ok).doubleValue() != 1.0) {
            return reply;
        }
        reply.put("writeConcernError", new Document("code", 64)
                .append("codeName", "WriteConcernFailed")
                .append("errmsg", "waiting for replication timed out (test server, w: \"" + WCERROR_TAG + "\")"));
        return reply;
    }

    static final String STEPDOWN_PREFIX = "mongomq-test-stepdown-";
    static final Set<String> STEPPED_DOWN = ConcurrentHashMap.newKeySet();

    /** The key of an insert's document that asks for a step-down, seen for the first time; or null. */
    static String stepDownKey(MongoMessage message) {
        Document command = message.getDocument();
        if (!command.containsKey("insert") || !(command.get("documents") instanceof List)) return null;
        for (Object d : (List<?>) command.get("documents")) {
            if (!(d instanceof Document)) continue;
            Object k = ((Document) d).get("dedup_key");
            if (k instanceof Document) k = ((Document) k).get("key");
            if (k instanceof String && ((String) k).startsWith(STEPDOWN_PREFIX) && STEPPED_DOWN.add((String) k)) {
                return (String) k;
            }
        }
        return null;
    }

    /** The reply to a command: with a writeConcernError, or a step-down error after applying it. */
    static Document answer(MongoMessage message, Document reply) {
        String stepDown = stepDownKey(message);
        if (stepDown != null && reply != null) {
            return new Document("ok", 0.0).append("code", 10107).append("codeName", "NotWritablePrimary")
                    .append("errmsg", "not primary (test server: stepped down after applying the insert of "
                            + stepDown + ")");
        }
        return withWriteConcernError(message, reply);
    }

    /** The in-memory backend, answering WCERROR_TAG writes with a writeConcernError. */
    static final class TestMemoryBackend extends MemoryBackend {
        @Override
        public Document handleMessage(MongoMessage message) {
            return answer(message, super.handleMessage(message));
        }
    }

    /**
     * H2 with a commit after every OP_MSG (every command libmongoc sends): an answered
     * write survives SIGKILL.
     */
    static final class DurableH2Backend extends H2Backend {
        DurableH2Backend(String file) {
            super(file);
        }

        @Override
        public Document handleMessage(MongoMessage message) {
            try {
                return answer(message, super.handleMessage(message));
            } finally {
                commit();
            }
        }
    }

    private static void usage(String error) {
        if (error != null) {
            System.err.println("mongomq-test-server: " + error);
        }
        System.err.println("usage: java -jar mongomq-test-server.jar [--host HOST] [--port N] [--oplog] [--h2 FILE]");
        System.exit(2);
    }

    private static byte[] pemBody(String file, String kind) throws Exception {
        String text = new String(Files.readAllBytes(Paths.get(file)), StandardCharsets.US_ASCII);
        int begin = text.indexOf("-----BEGIN " + kind + "-----");
        int end = text.indexOf("-----END " + kind + "-----");
        if (begin < 0 || end < 0) throw new IllegalArgumentException(file + ": no " + kind + " block");
        String body = text.substring(begin + kind.length() + 16, end).replaceAll("\\s", "");
        return Base64.getDecoder().decode(body);
    }

    private static PrivateKey readKey(String file) throws Exception {
        PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(pemBody(file, "PRIVATE KEY"));
        try {
            return KeyFactory.getInstance("RSA").generatePrivate(spec);
        } catch (Exception e) {
            return KeyFactory.getInstance("EC").generatePrivate(spec);
        }
    }

    private static X509Certificate readCert(String file) throws Exception {
        try (java.io.InputStream in = Files.newInputStream(Paths.get(file))) {
            return (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in);
        }
    }

    public static void main(String[] args) throws InterruptedException {
        String host = "127.0.0.1";
        int port = 0;
        boolean oplog = false;
        String h2File = null;
        String tlsKey = null;
        String tlsCert = null;

        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "--host":
                    if (++i >= args.length) usage("--host needs a value");
                    host = args[i];
                    break;
                case "--port":
                    if (++i >= args.length) usage("--port needs a value");
                    try {
                        port = Integer.parseInt(args[i]);
                    } catch (NumberFormatException e) {
                        usage("bad port: " + args[i]);
                    }
                    if (port < 0 || port > 65535) usage("bad port: " + args[i]);
                    break;
                case "--oplog":
                    oplog = true;
                    break;
                case "--tls-key":
                    if (++i >= args.length) usage("--tls-key needs a file");
                    tlsKey = args[i];
                    break;
                case "--tls-cert":
                    if (++i >= args.length) usage("--tls-cert needs a file");
                    tlsCert = args[i];
                    break;
                case "--h2":
                    if (++i >= args.length) usage("--h2 needs a file");
                    h2File = args[i];
                    break;
                case "-h":
                case "--help":
                    usage(null);
                    break;
                default:
                    usage("unknown argument: " + a);
            }
        }

        AbstractMongoBackend backend = h2File != null ? new DurableH2Backend(h2File) : new TestMemoryBackend();
        if (oplog) {
            backend.enableOplog();
        }
        MongoServer server = new MongoServer(backend);
        if ((tlsKey == null) != (tlsCert == null)) usage("--tls-key and --tls-cert go together");
        if (tlsKey != null) {
            try {
                server.enableSsl(readKey(tlsKey), null, readCert(tlsCert));
            } catch (Exception e) {
                usage("cannot read the TLS key or certificate: " + e);
            }
        }
        server.bind(host, port);

        Runtime.getRuntime().addShutdownHook(new Thread(server::shutdownNow, "mongomq-test-server-shutdown"));

        InetSocketAddress addr = server.getLocalAddress();
        System.out.println("mongodb://" + host + ":" + addr.getPort());
        System.out.flush();

        // Block until killed (the shutdown hook stops the server).
        new CountDownLatch(1).await();
    }
}
