/* Calls whose answers must be the same natively and through the h5lake
 * connector; each case prints what it sees. Usage: agree FILE CASE
 * (FILE: a .h5 path natively, a store path through the connector). */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what)
{
    printf("failed: %s\n", what);
    return 1;
}

/* A memory selection of another size than the file's is refused, and
 * neither the buffer nor the dataset is touched. */
static int counts(const char *path)
{
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t n = 64, six = 6, start = 0, ten = 10;
    hid_t space = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(f, "v", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int vals[64], got[64];
    for (int i = 0; i < 64; i++)
        vals[i] = i;
    if (H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, vals) < 0)
        return fail("write");
    hid_t mem = H5Screate_simple(1, &six, NULL);
    hid_t sel = H5Dget_space(d);
    H5Sselect_hyperslab(sel, H5S_SELECT_SET, &start, NULL, &ten, NULL);
    for (int i = 0; i < 64; i++)
        got[i] = -1;
    printf("read 6 of all: %s\n", H5Dread(d, H5T_NATIVE_INT, mem, H5S_ALL, H5P_DEFAULT, got) < 0 ? "refused" : "done");
    printf("read 6 of 10: %s\n", H5Dread(d, H5T_NATIVE_INT, mem, sel, H5P_DEFAULT, got) < 0 ? "refused" : "done");
    int touched = 0;
    for (int i = 0; i < 64; i++)
        touched += got[i] != -1;
    printf("buffer elements written: %d\n", touched);
    for (int i = 0; i < 64; i++)
        got[i] = 1000 + i;
    printf("write 6 to 10: %s\n", H5Dwrite(d, H5T_NATIVE_INT, mem, sel, H5P_DEFAULT, got) < 0 ? "refused" : "done");
    H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, got);
    printf("stored: %d %d %d\n", got[0], got[9], got[63]);
    H5Sclose(sel);
    H5Sclose(mem);
    H5Dclose(d);
    H5Sclose(space);
    return H5Fclose(f) < 0;
}

/* Written, then the program ends without H5Fclose: HDF5 closes the file
 * at exit, and what was written is there ("exit"); read back ("reread"). */
static int exit_open(const char *path, int reread)
{
    hsize_t n = 4;
    int vals[4] = {1, 2, 3, 4};
    if (reread) {
        hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        hid_t d = f < 0 ? -1 : H5Dopen2(f, "g/data", H5P_DEFAULT);
        if (d < 0 || H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, vals) < 0)
            return fail("reading it back");
        printf("read back: %d %d %d %d\n", vals[0], vals[1], vals[2], vals[3]);
        return 0;
    }
    for (int i = 0; i < 4; i++)
        vals[i] *= 10;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t g = H5Gcreate2(f, "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t s = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(g, "data", H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, vals) < 0)
        return fail("write");
    H5Dclose(d);
    printf("leaving the file open\n");
    return 0;
}

/* Filters in the order a program added them: deflate, then shuffle. */
static int filter_order(const char *path)
{
    hsize_t n = 1000, chunk = 100;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, &chunk);
    H5Pset_deflate(dcpl, 6);
    H5Pset_shuffle(dcpl);
    hid_t s = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(f, "z", H5T_STD_I32BE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    int vals[1000];
    for (int i = 0; i < 1000; i++)
        vals[i] = i * 7 - 300;
    if (H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, vals) < 0)
        return fail("write");
    H5Dclose(d);
    H5Fclose(f);
    f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    d = H5Dopen2(f, "z", H5P_DEFAULT);
    memset(vals, 0, sizeof vals);
    if (H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, vals) < 0)
        return fail("read");
    long sum = 0;
    for (int i = 0; i < 1000; i++)
        sum += vals[i];
    hid_t p = H5Dget_create_plist(d);
    int nf = H5Pget_nfilters(p);
    printf("filters %d: %d then %d; sum %ld; last %d\n", nf,
           (int)H5Pget_filter2(p, 0, NULL, NULL, NULL, 0, NULL, NULL),
           (int)H5Pget_filter2(p, 1, NULL, NULL, NULL, 0, NULL, NULL), sum, vals[999]);
    H5Pclose(p);
    H5Dclose(d);
    return H5Fclose(f) < 0;
}

/* H5Fcreate with truncation of a file this process has open is refused,
 * as is opening for writing one it has open only for reading. */
static int reopen(const char *path)
{
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t g = H5Gcreate2(f, "kept", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(g);
    H5Fflush(f, H5F_SCOPE_GLOBAL);
    hid_t again = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    printf("truncate while open: %s\n", again < 0 ? "refused" : "done");
    if (again >= 0)
        H5Fclose(again);
    printf("still there: %d\n", H5Lexists(f, "kept", H5P_DEFAULT) > 0);
    H5Fclose(f);
    hid_t ro = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t rw = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    printf("read-write while open read-only: %s\n", rw < 0 ? "refused" : "done");
    if (rw >= 0)
        H5Fclose(rw);
    H5Fclose(ro);
    hid_t rw2 = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t ro2 = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    printf("read-only while open read-write: %s\n", ro2 < 0 ? "refused" : "done");
    if (ro2 >= 0)
        H5Fclose(ro2);
    return H5Fclose(rw2) < 0;
}

/* A data transform is applied (natively) or refused: never ignored. */
static int transform(const char *path)
{
    hsize_t n = 4;
    int vals[4] = {0, 1, 2, 3}, got[4] = {0, 0, 0, 0};
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t s = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(f, "t", H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t x = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_data_transform(x, "x*2+1");
    herr_t w = H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, x, vals);
    H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, got);
    if (w < 0)
        printf("transformed write refused; stored %d %d\n", got[0], got[3]);
    else
        printf("transformed write: %d %d %d %d\n", got[0], got[1], got[2], got[3]);
    H5Pclose(x);
    H5Dclose(d);
    return H5Fclose(f) < 0;
}

static size_t allocated;

static void *counting_alloc(size_t size, void *info)
{
    (void)info;
    allocated += size;
    return malloc(size);
}

static void counting_free(void *p, void *info)
{
    (void)info;
    free(p);
}

/* The buffer size variable-length values need, as H5Dvlen_get_buf_size
 * counts it (through the transfer list's allocator), and a read through a
 * program's own allocator. */
static int vlen_size(const char *path)
{
    hsize_t n = 3;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t s = H5Screate_simple(1, &n, NULL);
    hid_t st = H5Tcopy(H5T_C_S1);
    H5Tset_size(st, H5T_VARIABLE);
    hid_t ds = H5Dcreate2(f, "s", st, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const char *words[3] = {"a", "bb", "a longer one"};
    if (H5Dwrite(ds, st, H5S_ALL, H5S_ALL, H5P_DEFAULT, words) < 0)
        return fail("write strings");
    hid_t vt = H5Tvlen_create(H5T_NATIVE_INT);
    hid_t dv = H5Dcreate2(f, "v", vt, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int a[1] = {1}, b[4] = {1, 2, 3, 4}, c[2] = {5, 6};
    hvl_t seqs[3] = {{1, a}, {4, b}, {2, c}};
    if (H5Dwrite(dv, vt, H5S_ALL, H5S_ALL, H5P_DEFAULT, seqs) < 0)
        return fail("write sequences");
    H5Dclose(dv);
    H5Dclose(ds);
    H5Fclose(f);
    f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    ds = H5Dopen2(f, "s", H5P_DEFAULT);
    dv = H5Dopen2(f, "v", H5P_DEFAULT);
    hsize_t size = 0;
    herr_t e = H5Dvlen_get_buf_size(ds, st, s, &size);
    printf("strings: %d %llu\n", (int)e, (unsigned long long)size);
    size = 0;
    e = H5Dvlen_get_buf_size(dv, vt, s, &size);
    printf("sequences: %d %llu\n", (int)e, (unsigned long long)size);
    hid_t x = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_vlen_mem_manager(x, counting_alloc, NULL, counting_free, NULL);
    char *got[3];
    allocated = 0;
    if (H5Dread(ds, st, H5S_ALL, H5S_ALL, x, got) < 0)
        return fail("read strings");
    printf("read %s %s %s through the allocator: %zu bytes\n", got[0], got[1], got[2], allocated);
    H5Treclaim(st, s, x, got);
    H5Pclose(x);
    H5Tclose(vt);
    H5Tclose(st);
    H5Dclose(dv);
    H5Dclose(ds);
    H5Sclose(s);
    return H5Fclose(f) < 0;
}

/* A committed datatype's handle outlives its file's, and the program ends
 * with it open. */
static int type_left_open(const char *path)
{
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t t = H5Tcopy(H5T_STD_U16BE);
    if (H5Tcommit2(f, "kind", t, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) < 0)
        return fail("commit");
    H5Tclose(t);
    H5Fclose(f);
    f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    t = H5Topen2(f, "kind", H5P_DEFAULT);
    printf("opened: %d, %zu bytes\n", t >= 0, H5Tget_size(t));
    H5Fclose(f);
    printf("after the file's close: %zu bytes, committed %d\n", H5Tget_size(t), (int)H5Tcommitted(t));
    return 0;
}

/* H5Lexists, H5Oexists_by_name: only the last name may be missing. */
static int exists(const char *path)
{
    hsize_t n = 1;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t g = H5Gcreate2(f, "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t s = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(f, "d", H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Lcreate_soft("/nowhere", f, "dangling", H5P_DEFAULT, H5P_DEFAULT);
    H5Lcreate_soft("/g", f, "soft", H5P_DEFAULT, H5P_DEFAULT);
    const char *names[] = {"g", "g/x", "x", "nope/x", "d/x", "g/../g", "dangling", "soft"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        printf("%s: link %d, object %d\n", names[i], (int)H5Lexists(f, names[i], H5P_DEFAULT),
               (int)H5Oexists_by_name(f, names[i], H5P_DEFAULT));
    H5Dclose(d);
    H5Sclose(s);
    H5Gclose(g);
    return H5Fclose(f) < 0;
}

/* A compact dataset reports its layout, is allocated with its values, and
 * is held to HDF5's 64 KiB. */
static int compact(const char *path)
{
    hsize_t n = 10, big = 100000;
    int vals[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_layout(dcpl, H5D_COMPACT);
    hid_t s = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(f, "c", H5T_NATIVE_INT, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (d < 0 || H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, vals) < 0)
        return fail("compact write");
    H5Dclose(d);
    H5Fclose(f);
    f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    d = H5Dopen2(f, "c", H5P_DEFAULT);
    hid_t p = H5Dget_create_plist(d);
    H5D_space_status_t status;
    H5Dget_space_status(d, &status);
    memset(vals, 0, sizeof vals);
    H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, vals);
    printf("layout %d, status %d, storage %llu, last %d\n", (int)H5Pget_layout(p), (int)status,
           (unsigned long long)H5Dget_storage_size(d), vals[9]);
    H5Pclose(p);
    H5Dclose(d);
    H5Fclose(f);
    f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t bs = H5Screate_simple(1, &big, NULL);
    hid_t too = H5Dcreate2(f, "too big", H5T_NATIVE_INT, bs, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    printf("400 KB compact: %s, linked %d\n", too < 0 ? "refused" : "made",
           (int)H5Lexists(f, "too big", H5P_DEFAULT));
    if (too >= 0)
        H5Dclose(too);
    H5Sclose(bs);
    H5Sclose(s);
    H5Pclose(dcpl);
    return H5Fclose(f) < 0;
}

/* Variable-length sequences read and written through another base type. */
static int vlen_convert(const char *path)
{
    hsize_t n = 2;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t s = H5Screate_simple(1, &n, NULL);
    hid_t vi = H5Tvlen_create(H5T_STD_I32LE), vd = H5Tvlen_create(H5T_NATIVE_DOUBLE);
    hid_t d = H5Dcreate2(f, "v", vi, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    double a[3] = {1.0, -2.0, 3.0}, b[1] = {40.0};
    hvl_t w[2] = {{3, a}, {1, b}}, r[2];
    if (H5Dwrite(d, vd, H5S_ALL, H5S_ALL, H5P_DEFAULT, w) < 0)
        return fail("write doubles into int32 sequences");
    hid_t vs = H5Tvlen_create(H5T_NATIVE_SHORT);
    short *p0;
    if (H5Dread(d, vd, H5S_ALL, H5S_ALL, H5P_DEFAULT, r) < 0)
        return fail("read as doubles");
    printf("as double: %zu %g %g | %zu %g\n", r[0].len, ((double *)r[0].p)[1],
           ((double *)r[0].p)[2], r[1].len, ((double *)r[1].p)[0]);
    H5Treclaim(vd, s, H5P_DEFAULT, r);
    if (H5Dread(d, vs, H5S_ALL, H5S_ALL, H5P_DEFAULT, r) < 0)
        return fail("read as shorts");
    p0 = r[0].p;
    printf("as short: %d %d %d\n", p0[0], p0[1], p0[2]);
    H5Treclaim(vs, s, H5P_DEFAULT, r);
    H5Tclose(vs);
    H5Tclose(vd);
    H5Tclose(vi);
    H5Dclose(d);
    H5Sclose(s);
    return H5Fclose(f) < 0;
}

static herr_t print_link(hid_t g, const char *name, const H5L_info2_t *info, void *data)
{
    (void)g;
    (void)info;
    (void)data;
    printf(" %s", name);
    return 0;
}

/* The creation-order index: only of groups that track creation order. */
static int crt_order(const char *path)
{
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
    H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
    hid_t groups[2] = {H5Gcreate2(f, "plain", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                       H5Gcreate2(f, "tracked", H5P_DEFAULT, gcpl, H5P_DEFAULT)};
    for (int k = 0; k < 2; k++) {
        const char *made[3] = {"c", "a", "b"};
        for (int i = 0; i < 3; i++)
            H5Gclose(H5Gcreate2(groups[k], made[i], H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
        hsize_t idx = 0;
        printf("%s: iterate", k ? "tracked" : "plain");
        herr_t e = H5Literate2(groups[k], H5_INDEX_CRT_ORDER, H5_ITER_INC, &idx, print_link, NULL);
        printf(" -> %d; visit", (int)e);
        e = H5Lvisit2(groups[k], H5_INDEX_CRT_ORDER, H5_ITER_INC, print_link, NULL);
        char name[16] = "";
        ssize_t got = H5Lget_name_by_idx(groups[k], ".", H5_INDEX_CRT_ORDER, H5_ITER_INC, 0, name,
                                          sizeof name, H5P_DEFAULT);
        H5L_info2_t info;
        H5Lget_info2(groups[k], "a", &info, H5P_DEFAULT);
        printf(" -> %d; first by order %d %s; corder of a %d/%lld\n", (int)e, (int)got,
               got < 0 ? "-" : name, (int)info.corder_valid,
               info.corder_valid ? (long long)info.corder : 0LL);
        H5Gclose(groups[k]);
    }
    H5Pclose(gcpl);
    return H5Fclose(f) < 0;
}

/* Plain reads and writes print nothing on HDF5's error stack (asking a
 * transfer list for a data transform it has none of must not). */
static int quiet(const char *path)
{
    H5Eset_auto2(H5E_DEFAULT, (H5E_auto2_t)H5Eprint2, stderr);
    hsize_t n = 4;
    int vals[4] = {1, 2, 3, 4};
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t s = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(f, "q", H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t x = H5Pcreate(H5P_DATASET_XFER);
    H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, vals);
    H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, x, vals);
    H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, vals);
    H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, x, vals);
    printf("read %d %d\n", vals[0], vals[3]);
    H5Pclose(x);
    H5Dclose(d);
    H5Sclose(s);
    return H5Fclose(f) < 0;
}

/* An open group is named where it is after it was moved. */
static int renamed_open(const char *path)
{
    hsize_t n = 1;
    char name[64];
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t g = H5Gcreate2(f, "old", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t s = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(g, "d", H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Lmove(f, "old", f, "new", H5P_DEFAULT, H5P_DEFAULT);
    H5Iget_name(g, name, sizeof name);
    printf("group: %s\n", name);
    /* (Natively the dataset opened through it still says /old/d; the
     * connector names it where it is, /new/d.) */
    H5Dclose(d);
    H5Sclose(s);
    H5Gclose(g);
    return H5Fclose(f) < 0;
}

/* Reads HDF5 has no conversion for fail, and leave the buffer as it was
 * (the connector read the stored bytes in first: a string read's pointers
 * then held raw data, which the program's clean-up freed). */
static int refused_read(const char *path)
{
    hsize_t n = 3;
    int ints[3] = {7, 8, 9};
    char strs[3][8] = {"one", "two", "three"};
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t s = H5Screate_simple(1, &n, NULL);
    hid_t fixed = H5Tcopy(H5T_C_S1);
    H5Tset_size(fixed, 8);
    hid_t di = H5Dcreate2(f, "i", H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t ds = H5Dcreate2(f, "s", fixed, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(di, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, ints);
    H5Dwrite(ds, fixed, H5S_ALL, H5S_ALL, H5P_DEFAULT, strs);
    hid_t vstr = H5Tcopy(H5T_C_S1);
    H5Tset_size(vstr, H5T_VARIABLE);
    hid_t vint = H5Tvlen_create(H5T_NATIVE_INT);
    hid_t opaque = H5Tcreate(H5T_OPAQUE, 4);
    H5Tset_tag(opaque, "tag");
    struct { const char *what; hid_t dset, mem; } cases[] = {
        {"string as vlen string", ds, vstr}, {"int as vlen string", di, vstr},
        {"int as vlen int", di, vint}, {"int as opaque", di, opaque},
        {"string as int", ds, H5T_NATIVE_INT}};
    unsigned char buf[128];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memset(buf, 0x5a, sizeof buf);
        herr_t e = H5Dread(cases[i].dset, cases[i].mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
        size_t changed = 0;
        for (size_t k = 0; k < sizeof buf; k++)
            changed += buf[k] != 0x5a;
        printf("%s: %s, %zu bytes changed\n", cases[i].what, e < 0 ? "refused" : "read", changed);
    }
    H5Tclose(opaque);
    H5Tclose(vint);
    H5Tclose(vstr);
    H5Tclose(fixed);
    H5Dclose(ds);
    H5Dclose(di);
    H5Sclose(s);
    return H5Fclose(f) < 0;
}

/* Another process grows a dataset this one has open: the extent it sees,
 * and so what a read of H5S_ALL fills, changes at H5Drefresh only (the
 * connector wrote the grown extent past a buffer sized from the old). */
static int grow(const char *path)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR | H5F_ACC_SWMR_WRITE, fapl);
    hid_t d = H5Dopen2(f, "rows", H5P_DEFAULT);
    hsize_t grown[2] = {500, 4};
    herr_t e = H5Dset_extent(d, grown);
    H5Dclose(d);
    H5Pclose(fapl);
    return (H5Fclose(f) < 0) | (e < 0);
}

static int grown_meanwhile(const char *path, const char *self)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
    hsize_t dims[2] = {3, 4}, max[2] = {H5S_UNLIMITED, 4};
    int vals[12];
    for (int i = 0; i < 12; i++)
        vals[i] = i;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t s = H5Screate_simple(2, dims, max);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, dims);
    hid_t d = H5Dcreate2(f, "rows", H5T_NATIVE_INT, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, vals);
    H5Dclose(d);
    H5Fclose(f);
    f = H5Fopen(path, H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, fapl);
    d = H5Dopen2(f, "rows", H5P_DEFAULT);
    hid_t seen = H5Dget_space(d);
    hssize_t n = H5Sget_simple_extent_npoints(seen);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' '%s' grow", self, path);
    if (system(cmd) != 0)
        printf("the other process failed\n");
    int *buf = malloc((size_t)(n + 4096) * sizeof(int));
    for (hssize_t i = 0; i < n + 4096; i++)
        buf[i] = -1;
    herr_t e = H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    int past = 0;
    for (hssize_t i = n; i < n + 4096; i++)
        past += buf[i] != -1;
    hid_t now = H5Dget_space(d);
    printf("read %d of %lld elements, %d past them; extent %lld", (int)e, (long long)n, past,
           (long long)H5Sget_simple_extent_npoints(now));
    H5Drefresh(d);
    hid_t fresh = H5Dget_space(d);
    printf(", %lld after H5Drefresh\n", (long long)H5Sget_simple_extent_npoints(fresh));
    free(buf);
    H5Sclose(fresh);
    H5Sclose(now);
    H5Sclose(seen);
    H5Sclose(s);
    H5Pclose(dcpl);
    H5Pclose(fapl);
    H5Dclose(d);
    return H5Fclose(f) < 0;
}

/* How many rows another process opening the file for SWMR reading sees. */
static int rows_seen(const char *path)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, H5P_DEFAULT);
    hid_t d = f < 0 ? -1 : H5Dopen2(f, "rows", H5P_DEFAULT);
    if (d < 0) {
        printf("no dataset");
    } else {
        hid_t s = H5Dget_space(d);
        printf("%lld", (long long)H5Sget_simple_extent_npoints(s));
        H5Sclose(s);
        H5Dclose(d);
    }
    if (f >= 0)
        H5Fclose(f);
    return 0;
}

/* An SWMR writer's rows reach readers at each H5Dflush (through the
 * connector they showed only at the file's flush or close). */
static int swmr_flush(const char *path, const char *self)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
    hsize_t dims[1] = {0}, max[1] = {H5S_UNLIMITED}, chunk[1] = {16};
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t s = H5Screate_simple(1, dims, max);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, chunk);
    hid_t d = H5Dcreate2(f, "rows", H5T_NATIVE_INT, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Fstart_swmr_write(f);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' '%s' rows", self, path);
    for (int i = 1; i <= 3; i++) {
        hsize_t n[1] = {(hsize_t)i}, at[1] = {(hsize_t)i - 1}, one[1] = {1};
        H5Dset_extent(d, n);
        hid_t fs = H5Dget_space(d);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, at, NULL, one, NULL);
        hid_t ms = H5Screate_simple(1, one, NULL);
        int v = 10 * i;
        H5Dwrite(d, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, &v);
        H5Dflush(d);
        printf("after row %d: ", i);
        fflush(stdout);
        if (system(cmd) != 0)
            printf("(the reader failed)");
        printf("\n");
        H5Sclose(ms);
        H5Sclose(fs);
    }
    H5Dclose(d);
    H5Sclose(s);
    H5Pclose(dcpl);
    H5Pclose(fapl);
    return H5Fclose(f) < 0;
}

static herr_t count_link(hid_t g, const char *name, const H5L_info2_t *info, void *data)
{
    (void)g;
    (void)name;
    (void)info;
    ++*(int *)data;
    return 0;
}

/* Edges of link calls native HDF5 refuses: iterating from a start index
 * past the last link, moving a link onto its own name. */
static int link_edges(const char *path)
{
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(H5Gcreate2(f, "a", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    H5Gclose(H5Gcreate2(f, "b", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    for (hsize_t start = 0; start < 4; start++) {
        hsize_t idx = start;
        int n = 0;
        herr_t e = H5Literate2(f, H5_INDEX_NAME, H5_ITER_INC, &idx, count_link, &n);
        printf("from %llu: %s, %d links\n", (unsigned long long)start, e < 0 ? "refused" : "ok", n);
    }
    printf("move onto itself: %s\n",
           H5Lmove(f, "a", f, "a", H5P_DEFAULT, H5P_DEFAULT) < 0 ? "refused" : "ok");
    printf("a still there: %d\n", H5Lexists(f, "a", H5P_DEFAULT) > 0);
    return H5Fclose(f) < 0;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    const char *path = argv[1], *what = argv[2];
    if (!strcmp(what, "counts"))
        return counts(path);
    if (!strcmp(what, "exit"))
        return exit_open(path, 0);
    if (!strcmp(what, "reread"))
        return exit_open(path, 1);
    if (!strcmp(what, "filter-order"))
        return filter_order(path);
    if (!strcmp(what, "reopen"))
        return reopen(path);
    if (!strcmp(what, "transform"))
        return transform(path);
    if (!strcmp(what, "vlen-size"))
        return vlen_size(path);
    if (!strcmp(what, "type-left-open"))
        return type_left_open(path);
    if (!strcmp(what, "exists"))
        return exists(path);
    if (!strcmp(what, "compact"))
        return compact(path);
    if (!strcmp(what, "renamed-open"))
        return renamed_open(path);
    if (!strcmp(what, "vlen-convert"))
        return vlen_convert(path);
    if (!strcmp(what, "crt-order"))
        return crt_order(path);
    if (!strcmp(what, "quiet"))
        return quiet(path);
    if (!strcmp(what, "refused-read"))
        return refused_read(path);
    if (!strcmp(what, "grow"))
        return grow(path);
    if (!strcmp(what, "grown-meanwhile"))
        return grown_meanwhile(path, argv[0]);
    if (!strcmp(what, "rows"))
        return rows_seen(path);
    if (!strcmp(what, "swmr-flush"))
        return swmr_flush(path, argv[0]);
    if (!strcmp(what, "link-edges"))
        return link_edges(path);
    return 2;
}
