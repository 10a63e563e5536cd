package org.mongomq;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** Every scenario of bindings/CONTRACT.md has its JUnit test, under its name in Java style. */
class ScenarioNamesTest {
    private static final Pattern ROW = Pattern.compile("^\\| `([a-z0-9_]+)` \\|", Pattern.MULTILINE);

    static String javaName(String scenario) {
        StringBuilder sb = new StringBuilder();
        boolean up = false;
        for (char ch : scenario.toCharArray()) {
            if (ch == '_') {
                up = true;
            } else {
                sb.append(up ? Character.toUpperCase(ch) : ch);
                up = false;
            }
        }
        return sb.toString();
    }

    @Test
    void everyContractScenarioHasItsTest() throws IOException {
        String base = System.getProperty("basedir", System.getProperty("user.dir"));
        Path contract = Path.of(base).resolve("../CONTRACT.md").normalize();
        assertTrue(Files.isRegularFile(contract), "no " + contract);
        Matcher m = ROW.matcher(Files.readString(contract, StandardCharsets.UTF_8));
        Set<String> tests = new HashSet<>();
        for (Class<?> c : List.of(ContractTest.class, SafetyTest.class, WorkerTest.class)) {
            for (Method method : c.getDeclaredMethods()) {
                if (method.isAnnotationPresent(Test.class)) tests.add(method.getName());
            }
        }
        List<String> missing = new ArrayList<>();
        int n = 0;
        while (m.find()) {
            n++;
            String name = javaName(m.group(1));
            if (!tests.contains(name)) missing.add(m.group(1) + " (" + name + ")");
        }
        assertTrue(n > 40, "found only " + n + " scenarios in " + contract);
        assertTrue(missing.isEmpty(), "CONTRACT scenarios without a JUnit test: " + missing);
    }
}
