package acidflow.hive31;

/** The little JSON this tool prints: strings with escapes, nothing else. */
final class Json {
    private Json() {
    }

    /** Append {@code v} as a JSON string literal (quotes, backslash and control characters escaped). */
    static void appendString(StringBuilder sb, String v) {
        sb.append('"');
        for (int i = 0; i < v.length(); i++) {
            char c = v.charAt(i);
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        sb.append('"');
    }

    /** {@code {"error": "<class: message, causes, stack>"}} for a failure. */
    static String error(Throwable t) {
        java.io.StringWriter text = new java.io.StringWriter();
        t.printStackTrace(new java.io.PrintWriter(text));
        StringBuilder sb = new StringBuilder("{\"error\":");
        appendString(sb, text.toString());
        return sb.append('}').toString();
    }
}
