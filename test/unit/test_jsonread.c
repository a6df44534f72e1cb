/* test_jsonread.c - the JSON reader (tracer/base/jsonread.c): documents
 * that parse and what lookups find in them, nesting, strings with escapes,
 * missing keys, malformed documents refused with an offset, and no crash
 * on any truncation or corruption of a valid document. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/base/json.h"
#include "tracer/base/jsonread.h"

static void parse_ok(dmm_jsonread_t *d, const char *text)
{
    dmm_err_t err;
    cr_assert_eq(dmm_jsonread_parse(d, text, strlen(text), &err), 0, "%s: %s", text, err.msg);
}

static double num(const dmm_jsonread_t *d, const char *path)
{
    double v = NAN;
    cr_assert_eq(dmm_jsonread_num(d, path, &v), 0, "no number at %s", path);
    return v;
}

Test(jsonread, numbers_and_keys_of_a_flat_object)
{
    dmm_jsonread_t d;
    parse_ok(&d, " {\"wall_s\":0.019292, \"ops\" : 72335,\"neg\":-1.5e3,\"zero\":0,"
                 "\"e\":2E-2,\"t\":true,\"f\":false,\"n\":null}\n");
    cr_expect_float_eq(num(&d, "wall_s"), 0.019292, 1e-12);
    cr_expect_eq(num(&d, "ops"), 72335);
    cr_expect_eq(num(&d, "neg"), -1500);
    cr_expect_eq(num(&d, "zero"), 0);
    cr_expect_float_eq(num(&d, "e"), 0.02, 1e-12);
    cr_expect_eq(dmm_jsonread_type(&d, ""), DMM_JSON_OBJECT);
    cr_expect_eq(dmm_jsonread_type(&d, "t"), DMM_JSON_TRUE);
    cr_expect_eq(dmm_jsonread_type(&d, "f"), DMM_JSON_FALSE);
    cr_expect_eq(dmm_jsonread_type(&d, "n"), DMM_JSON_NULL);
    cr_expect_eq(dmm_jsonread_count(&d, ""), 8);
    double v;
    cr_expect_neq(dmm_jsonread_num(&d, "t", &v), 0, "true is not a number");
    cr_expect_neq(dmm_jsonread_num(&d, "n", &v), 0, "null is not a number");
    dmm_jsonread_free(&d);

    /* any value may be the document */
    parse_ok(&d, "42");
    cr_expect_eq(num(&d, ""), 42);
    dmm_jsonread_free(&d);
    parse_ok(&d, "\"x\"");
    cr_expect_eq(dmm_jsonread_type(&d, ""), DMM_JSON_STRING);
    dmm_jsonread_free(&d);
}

Test(jsonread, nested_objects_and_arrays_by_key_path)
{
    dmm_jsonread_t d;
    parse_ok(&d, "{\"latency\":{\"alloc\":{\"count\":3,\"p50_ns\":29.58},\"free\":{\"p50_ns\":7}},"
                 "\"hist\":[[20.04,3824],[29.58,21002]],\"log\":[{\"gen\":0},{\"gen\":1,"
                 "\"x\":[]}],\"empty\":{},\"last\":5}");
    cr_expect_float_eq(num(&d, "latency.alloc.p50_ns"), 29.58, 1e-12);
    cr_expect_eq(num(&d, "latency.free.p50_ns"), 7);
    cr_expect_eq(num(&d, "hist.1.1"), 21002);
    cr_expect_float_eq(num(&d, "hist.0.0"), 20.04, 1e-12);
    cr_expect_eq(num(&d, "log.1.gen"), 1);
    cr_expect_eq(num(&d, "last"), 5, "the member after nested ones");
    cr_expect_eq(dmm_jsonread_count(&d, "hist"), 2);
    cr_expect_eq(dmm_jsonread_count(&d, "log.1.x"), 0);
    cr_expect_eq(dmm_jsonread_count(&d, "empty"), 0);
    cr_expect_eq(dmm_jsonread_count(&d, "latency"), 2);
    cr_expect_eq(dmm_jsonread_count(&d, "last"), -1, "a number has no members");
    cr_expect_eq(dmm_jsonread_type(&d, "latency.alloc"), DMM_JSON_OBJECT);
    cr_expect_eq(dmm_jsonread_type(&d, "hist.0"), DMM_JSON_ARRAY);
    dmm_jsonread_free(&d);
}

Test(jsonread, missing_keys_and_wrong_paths_are_not_found)
{
    dmm_jsonread_t d;
    parse_ok(&d, "{\"a\":{\"b\":1},\"arr\":[1,2],\"ops_in_trace\":9,\"dup\":1,\"dup\":2}");
    double v = 123;
    cr_expect_neq(dmm_jsonread_num(&d, "ops", &v), 0, "a key is not a prefix of another");
    cr_expect_eq(v, 123, "v changed though nothing was found");
    cr_expect_neq(dmm_jsonread_num(&d, "b", &v), 0, "a nested key is not at the top");
    cr_expect_neq(dmm_jsonread_num(&d, "a.c", &v), 0);
    cr_expect_neq(dmm_jsonread_num(&d, "a.b.c", &v), 0, "a number has no members");
    cr_expect_neq(dmm_jsonread_num(&d, "arr.2", &v), 0, "past the end");
    cr_expect_neq(dmm_jsonread_num(&d, "arr.x", &v), 0, "arrays take indexes");
    cr_expect_neq(dmm_jsonread_num(&d, "arr.-1", &v), 0);
    cr_expect_neq(dmm_jsonread_num(&d, "a.", &v), 0);
    cr_expect_neq(dmm_jsonread_num(&d, "a", &v), 0, "an object is not a number");
    cr_expect_eq(dmm_jsonread_type(&d, "nothing"), DMM_JSON_NONE);
    cr_expect_eq(num(&d, "arr.1"), 2);
    cr_expect_eq(num(&d, "dup"), 1, "the first of two equal keys");
    char buf[8];
    cr_expect_eq(dmm_jsonread_str(&d, "a", buf, sizeof buf), -1);
    dmm_jsonread_free(&d);
}

Test(jsonread, strings_with_escapes_decode_and_match_keys)
{
    dmm_jsonread_t d;
    parse_ok(&d, "{\"q\\\"k\":1,\"path\":\"/tmp/a \\\"b\\\"\\\\c\\/d\",\"ctl\":\"\\b\\f\\n\\r\\t\","
                 "\"u\":\"\\u00e9\\u20ac\\ud83d\\ude00\",\"lone\":\"\\ud800x\",\"raw\":\"\xc3\xa9\xff\","
                 "\"caf\\u00e9\":2,\"dots.in.key\":3}");
    char buf[64];
    cr_expect_eq(num(&d, "q\"k"), 1, "a key with an escaped quote");
    cr_expect_eq(num(&d, "caf\xc3\xa9"), 2, "a key with \\u matches its UTF-8");
    cr_expect_eq(dmm_jsonread_str(&d, "path", buf, sizeof buf), 14);
    cr_expect_str_eq(buf, "/tmp/a \"b\"\\c/d");
    cr_expect_eq(dmm_jsonread_str(&d, "ctl", buf, sizeof buf), 5);
    cr_expect_str_eq(buf, "\b\f\n\r\t");
    cr_expect_gt(dmm_jsonread_str(&d, "u", buf, sizeof buf), 0);
    cr_expect_str_eq(buf, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "é € and a surrogate pair");
    dmm_jsonread_str(&d, "lone", buf, sizeof buf);
    cr_expect_str_eq(buf, "\xef\xbf\xbdx", "a lone surrogate: U+FFFD");
    dmm_jsonread_str(&d, "raw", buf, sizeof buf);
    cr_expect_str_eq(buf, "\xc3\xa9\xff", "bytes above 0x7f pass as they are");
    /* a short buffer: truncated and terminated, the full length returned */
    char small[5];
    cr_expect_eq(dmm_jsonread_str(&d, "path", small, sizeof small), 14);
    cr_expect_str_eq(small, "/tmp");
    cr_expect_eq(dmm_jsonread_type(&d, "dots.in.key"), DMM_JSON_NONE,
                 "a dot always separates keys");
    dmm_jsonread_free(&d);
}

Test(jsonread, reads_back_what_the_writer_wrote)
{
    for (int pretty = 0; pretty < 2; pretty++) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        cr_assert_not_null(f);
        dmm_json_t j;
        dmm_json_begin(&j, f, pretty);
        dmm_json_string(&j, "trace", "/tmp/we\"ird\tname\x01.trc");
        dmm_json_u64(&j, "ops", 18446744073709551615ull);
        dmm_json_num(&j, "inf", "%.2f", INFINITY);
        dmm_json_obj(&j, "latency");
        dmm_json_num(&j, "p50_ns", "%.2f", 41.0);
        dmm_json_close_obj(&j);
        dmm_json_arr(&j, "sizes");
        dmm_json_u64(&j, NULL, 16);
        dmm_json_i64(&j, NULL, -3);
        dmm_json_close_arr(&j);
        dmm_json_end(&j);
        fclose(f);
        dmm_jsonread_t d;
        dmm_err_t err;
        cr_assert_eq(dmm_jsonread_parse(&d, text, len, &err), 0, "%s: %s", text, err.msg);
        char buf[64];
        dmm_jsonread_str(&d, "trace", buf, sizeof buf);
        cr_expect_str_eq(buf, "/tmp/we\"ird\tname\x01.trc");
        cr_expect_float_eq(num(&d, "ops"), 18446744073709551615.0, 1e4);
        cr_expect_eq(dmm_jsonread_type(&d, "inf"), DMM_JSON_NULL);
        cr_expect_eq(num(&d, "latency.p50_ns"), 41);
        cr_expect_eq(num(&d, "sizes.1"), -3);
        dmm_jsonread_free(&d);
        free(text);
    }
}

Test(jsonread, malformed_documents_are_refused_with_an_offset)
{
    static const char *const bad[] = {
        "", " ", "{", "}", "[", "[1,]", "[,1]", "{\"a\":1,}", "{\"a\" 1}", "{\"a\":}", "{a:1}",
        "{'a':1}", "{\"a\":1}}", "{\"a\":1} x", "[1 2]", "01", "-", "1.", ".5", "1e", "1e+",
        "+1", "0x10", "NaN", "Infinity", "tru", "nul", "falsey", "\"abc", "\"a\\x\"",
        "\"\\u12\"", "\"\\u12g4\"", "\"tab\there\"", "\"nl\nhere\"", "[\"a\"\"b\"]",
        "{\"a\":1,\"a\"}", "[1]x", "\"\\", "{\"a\":[1,{\"b\":}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dmm_jsonread_t d;
        dmm_err_t err;
        err.msg[0] = 0;
        cr_expect_neq(dmm_jsonread_parse(&d, bad[i], strlen(bad[i]), &err), 0, "'%s' parsed",
                      bad[i]);
        cr_expect(strstr(err.msg, "JSON offset "), "'%s': message '%s'", bad[i], err.msg);
        cr_expect_null(d.node, "'%s': nodes left", bad[i]);
    }
    /* a NUL inside the given length */
    dmm_jsonread_t d;
    cr_expect_neq(dmm_jsonread_parse(&d, "{\"a\":1}\0", 8, NULL), 0);
    cr_expect_neq(dmm_jsonread_parse(&d, "\"a\0b\"", 5, NULL), 0);
    /* only the given length is read: the rest is not part of the document */
    cr_expect_eq(dmm_jsonread_parse(&d, "[1]garbage", 3, NULL), 0);
    dmm_jsonread_free(&d);
}

Test(jsonread, deep_nesting_is_refused_not_a_crash)
{
    size_t n = 100000;
    char *s = malloc(2 * n + 1);
    cr_assert_not_null(s);
    memset(s, '[', n);
    memset(s + n, ']', n);
    s[2 * n] = 0;
    dmm_jsonread_t d;
    dmm_err_t err;
    cr_expect_neq(dmm_jsonread_parse(&d, s, 2 * n, &err), 0);
    cr_expect(strstr(err.msg, "deep"), "%s", err.msg);
    /* a few hundred levels are fine */
    cr_expect_eq(dmm_jsonread_parse(&d, s + n - 300, 600, &err), 0, "%s", err.msg);
    cr_expect_eq(dmm_jsonread_count(&d, "0.0.0"), 1);
    dmm_jsonread_free(&d);
    free(s);
}

/* Every prefix and many corruptions of a valid document parse or fail
 * cleanly, and lookups in what parsed stay inside it. */
Test(jsonread, truncated_and_corrupted_documents_never_crash)
{
    const char *doc = "{\"trace\":\"/t/a\\\"b\\u00e9.trc\",\"ops\":72335,\"wall_s\":0.019292,"
                      "\"latency\":{\"alloc\":{\"p50_ns\":29.58,\"n\":[1,-2.5e-3,true,null]}},"
                      "\"ok\":false,\"hist\":[[20.04,3824],[]]}";
    size_t len = strlen(doc);
    char *buf = malloc(len + 1);
    cr_assert_not_null(buf);
    static const char *const paths[] = { "", "ops", "latency.alloc.p50_ns", "latency.alloc.n.1",
                                         "hist.0.1", "hist.1.0", "trace", "x.y.z" };
    static const char set[] = "{}[]\",:\\u0-1eE.tfn \x00\x80";
    uint64_t x = 12345;
    for (size_t trial = 0; trial < 20000; trial++) {
        size_t n = len;
        memcpy(buf, doc, len);
        if (trial <= len) {
            n = trial;   /* every prefix */
        } else {
            for (int k = 0; k < 1 + (int)(trial % 3); k++) {
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                buf[(x >> 33) % len] = set[(x >> 13) % (sizeof set - 1)];
            }
        }
        dmm_jsonread_t d;
        dmm_err_t err;
        if (dmm_jsonread_parse(&d, buf, n, &err) != 0) {
            cr_assert(strstr(err.msg, "JSON offset "), "%s", err.msg);
            continue;
        }
        for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
            double v;
            char s[16];
            dmm_jsonread_type(&d, paths[p]);
            dmm_jsonread_num(&d, paths[p], &v);
            dmm_jsonread_str(&d, paths[p], s, sizeof s);
            dmm_jsonread_count(&d, paths[p]);
        }
        dmm_jsonread_free(&d);
    }
    free(buf);
}
