// Test oracle: Hive 3.1.3's own SQL parser and CREATE TABLE column analysis read the statements
// `acidflow table ddl` prints. Run as a single-file source program (java -cp <hive jars>
// HiveDdlParse.java FILE...); prints one JSON object per file with what Hive understood, or
// exits 2 naming the file on a syntax error. Uses HiveLexer/HiveParser with a HiveConf (so
// backquoted identifiers follow hive.support.quoted.identifiers=column, Hive's default) and
// BaseSemanticAnalyzer's static helpers (getColumns with constraints, unescapeSQLString,
// readProps), as SemanticAnalyzer.analyzeCreateTable does.
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.antlr.runtime.Token;
import org.antlr.runtime.TokenRewriteStream;
import org.antlr.runtime.tree.CommonTree;
import org.antlr.runtime.tree.CommonTreeAdaptor;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.SQLCheckConstraint;
import org.apache.hadoop.hive.metastore.api.SQLDefaultConstraint;
import org.apache.hadoop.hive.metastore.api.SQLForeignKey;
import org.apache.hadoop.hive.metastore.api.SQLNotNullConstraint;
import org.apache.hadoop.hive.metastore.api.SQLPrimaryKey;
import org.apache.hadoop.hive.metastore.api.SQLUniqueConstraint;
import org.apache.hadoop.hive.ql.parse.ASTNode;
import org.apache.hadoop.hive.ql.parse.BaseSemanticAnalyzer;
import org.apache.hadoop.hive.ql.parse.HiveLexer;
import org.apache.hadoop.hive.ql.parse.HiveParser;
import org.apache.hadoop.hive.ql.parse.ParseDriver;

public class HiveDdlParse {
  static String q(String s) {
    if (s == null) return "null";
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    return b.append('"').toString();
  }

  static String cols(List<FieldSchema> cols) {
    List<String> out = new ArrayList<>();
    for (FieldSchema f : cols) {
      out.add("[" + q(f.getName()) + "," + q(f.getType()) + "," + q(f.getComment()) + "]");
    }
    return "[" + String.join(",", out) + "]";
  }

  public static void main(String[] args) throws Exception {
    HiveConf conf = new HiveConf();
    ParseDriver pd = new ParseDriver();
    for (String file : args) {
      String sql = new String(Files.readAllBytes(Paths.get(file)), StandardCharsets.UTF_8).trim();
      if (sql.endsWith(";")) sql = sql.substring(0, sql.length() - 1);  // beeline's terminator
      HiveLexer lexer = pd.new HiveLexerX(pd.new ANTLRNoCaseStringStream(sql));
      lexer.setHiveConf(conf);
      TokenRewriteStream tokens = new TokenRewriteStream(lexer);
      HiveParser parser = new HiveParser(tokens);
      parser.setHiveConf(conf);
      parser.setTreeAdaptor(new CommonTreeAdaptor() {
        @Override public Object create(Token t) { return new ASTNode(t); }
        @Override public Object dupNode(Object t) { return create(((CommonTree) t).token); }
      });
      ASTNode root = (ASTNode) parser.statement().getTree();
      if (lexer.getNumberOfSyntaxErrors() + parser.getNumberOfSyntaxErrors() > 0) {
        System.err.println("Hive 3.1.3 cannot parse " + file);
        System.exit(2);
      }
      ASTNode create = (ASTNode) root.getChild(0);
      if (create.getType() != HiveParser.TOK_CREATETABLE) {
        System.err.println(file + " is not a CREATE TABLE: " + create.dump());
        System.exit(2);
      }
      Map<String, String> out = new LinkedHashMap<>();
      List<SQLPrimaryKey> pks = new ArrayList<>();
      for (int i = 0; i < create.getChildCount(); i++) {
        ASTNode c = (ASTNode) create.getChild(i);
        switch (c.getType()) {
          case HiveParser.TOK_TABNAME:
            List<String> parts = new ArrayList<>();
            for (int j = 0; j < c.getChildCount(); j++) {
              parts.add(BaseSemanticAnalyzer.unescapeIdentifier(c.getChild(j).getText()));
            }
            out.put("name", q(String.join(".", parts)));
            break;
          case HiveParser.TOK_TABCOLLIST:
            out.put("columns", cols(BaseSemanticAnalyzer.getColumns(c, true, tokens, pks,
                new ArrayList<SQLForeignKey>(), new ArrayList<SQLUniqueConstraint>(),
                new ArrayList<SQLNotNullConstraint>(), new ArrayList<SQLDefaultConstraint>(),
                new ArrayList<SQLCheckConstraint>(), conf)));
            break;
          case HiveParser.TOK_TABLECOMMENT:
            out.put("comment", q(BaseSemanticAnalyzer.unescapeSQLString(c.getChild(0).getText())));
            break;
          case HiveParser.TOK_TABLEPARTCOLS:
            out.put("partition_columns", cols(BaseSemanticAnalyzer.getColumns(c, false, conf)));
            break;
          case HiveParser.TOK_ALTERTABLE_BUCKETS:
            List<String> b = new ArrayList<>();
            for (String n : BaseSemanticAnalyzer.getColumnNames((ASTNode) c.getChild(0))) b.add(q(n));
            out.put("bucket_columns", "[" + String.join(",", b) + "]");
            out.put("num_buckets", c.getChild(c.getChildCount() - 1).getText());
            break;
          case HiveParser.TOK_TABLESERIALIZER:
            out.put("serde", q(BaseSemanticAnalyzer.unescapeSQLString(
                c.getChild(0).getChild(0).getText())));
            break;
          case HiveParser.TOK_TABLEFILEFORMAT:
            out.put("input_format", q(BaseSemanticAnalyzer.unescapeSQLString(c.getChild(0).getText())));
            out.put("output_format", q(BaseSemanticAnalyzer.unescapeSQLString(c.getChild(1).getText())));
            break;
          case HiveParser.TOK_TABLELOCATION:
            out.put("location", q(BaseSemanticAnalyzer.unescapeSQLString(c.getChild(0).getText())));
            break;
          case HiveParser.TOK_TABLEPROPERTIES:
            Map<String, String> props = new TreeMap<>();
            BaseSemanticAnalyzer.readProps((ASTNode) c.getChild(0), props);
            List<String> kv = new ArrayList<>();
            for (Map.Entry<String, String> e : props.entrySet()) kv.add(q(e.getKey()) + ":" + q(e.getValue()));
            out.put("properties", "{" + String.join(",", kv) + "}");
            break;
          default:
            break;
        }
      }
      List<String> pk = new ArrayList<>();
      for (SQLPrimaryKey k : pks) pk.add(q(k.getColumn_name()));
      out.put("primary_key", "[" + String.join(",", pk) + "]");
      List<String> fields = new ArrayList<>();
      for (Map.Entry<String, String> e : out.entrySet()) fields.add(q(e.getKey()) + ":" + e.getValue());
      System.out.println("{" + String.join(",", fields) + "}");
    }
  }
}
