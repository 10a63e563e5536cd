package org.mongomq;

/**
 * Receives libmongoc's log lines (see {@link Client#setLogHandler(LogHandler)}).
 */
@FunctionalInterface
public interface LogHandler {
    /**
     * One line of libmongoc's log, on the binding's log thread ("mongomq-log"), one line
     * at a time, in the order libmongoc wrote them.
     *
     * @param level   libmongoc's level: 0 error, 1 critical, 2 warning, 3 message,
     *                4 info, 5 debug, 6 trace
     * @param domain  libmongoc's log domain ("mongoc", "cluster", ...)
     * @param message the text of the line
     */
    void log(int level, String domain, String message);
}
