package org.mongomq;

/**
 * Receives libmongoc's log lines (see {@link Client#setLogHandler(LogHandler)}); the
 * default one is {@link #systemLogger()}.
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

    /**
     * The default handler (installed when the first {@link Client} is made): each line
     * goes to {@link System.Logger} "mongomq" as "DOMAIN: MESSAGE", levels mapped as
     * 0 error and 1 critical to ERROR, 2 warning to WARNING, 3 message and 4 info to
     * INFO, 5 debug and 6 trace to DEBUG. Give it to {@link Client#setLogHandler} to
     * bring the default back after another handler.
     */
    static LogHandler systemLogger() {
        return LogPump.SYSTEM_LOGGER;
    }
}
