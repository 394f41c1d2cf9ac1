/* A plain HDF5 C program: groups, a chunked gzip dataset written by
 * hyperslabs and points, a compound dataset, attributes, soft and hard
 * links, iteration. It checks what it reads back and exits non-zero on any
 * difference. Run natively it writes an HDF5 file; with
 * HDF5_VOL_CONNECTOR=h5lake (and HDF5_PLUGIN_PATH) the same binary writes
 * an h5lake store; `h5lake diff` must find the two equal.
 *
 *     roundtrip OUTPUT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hdf5.h"

#define CHECK(x)                                                                 \
    do {                                                                         \
        if ((x) < 0) {                                                           \
            fprintf(stderr, "roundtrip: %s failed (line %d)\n", #x, __LINE__);   \
            exit(2);                                                             \
        }                                                                        \
    } while (0)

#define EXPECT(cond)                                                             \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "roundtrip: expected %s (line %d)\n", #cond, __LINE__); \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

typedef struct {
    int    id;
    double value;
    char   tag[4];
} record_t;

static int n_links;
static herr_t count_link(hid_t g, const char *name, const H5L_info2_t *info, void *data)
{
    (void)g; (void)info;
    strcat((char *)data, name);
    strcat((char *)data, ",");
    n_links++;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: roundtrip OUTPUT\n");
        return 2;
    }
    hid_t f = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(f);

    /* groups, with an intermediate one created on the way */
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    CHECK(H5Pset_create_intermediate_group(lcpl, 1));
    hid_t g = H5Gcreate2(f, "/run/frames", lcpl, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(g);

    /* a chunked, shuffled, gzip-compressed, extendible 2-D dataset */
    hsize_t dims[2] = {40, 30}, maxdims[2] = {H5S_UNLIMITED, 30}, chunk[2] = {16, 16};
    hid_t space = H5Screate_simple(2, dims, maxdims);
    hid_t dcpl  = H5Pcreate(H5P_DATASET_CREATE);
    CHECK(H5Pset_chunk(dcpl, 2, chunk));
    CHECK(H5Pset_shuffle(dcpl));
    CHECK(H5Pset_deflate(dcpl, 6));
    int fill = -1;
    CHECK(H5Pset_fill_value(dcpl, H5T_NATIVE_INT, &fill));
    hid_t d = H5Dcreate2(g, "raw", H5T_STD_I32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    CHECK(d);

    /* hyperslab write: rows 4..35 step 1, columns 2..27 step 5 (blocks of 2) */
    hsize_t start[2] = {4, 2}, stride[2] = {1, 5}, count[2] = {32, 5}, block[2] = {1, 2};
    int     slab[32][10];
    for (int i = 0; i < 32; i++)
        for (int j = 0; j < 10; j++)
            slab[i][j] = i * 100 + j;
    CHECK(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, stride, count, block));
    hsize_t mdims[2] = {32, 10};
    hid_t   mspace   = H5Screate_simple(2, mdims, NULL);
    CHECK(H5Dwrite(d, H5T_NATIVE_INT, mspace, space, H5P_DEFAULT, slab));

    /* point selection write, from a strided memory selection */
    hsize_t coords[4][2] = {{0, 0}, {39, 29}, {20, 1}, {7, 13}};
    int     pts[8]       = {11, 0, 22, 0, 33, 0, 44, 0};
    CHECK(H5Sselect_elements(space, H5S_SELECT_SET, 4, (const hsize_t *)coords));
    hsize_t n8 = 8, m_start = 0, m_stride = 2, m_count = 4;
    hid_t   pspace = H5Screate_simple(1, &n8, NULL);
    CHECK(H5Sselect_hyperslab(pspace, H5S_SELECT_SET, &m_start, &m_stride, &m_count, NULL));
    CHECK(H5Dwrite(d, H5T_NATIVE_INT, pspace, space, H5P_DEFAULT, pts));

    /* grow it and write the new rows as doubles (converted by HDF5) */
    hsize_t newdims[2] = {48, 30};
    CHECK(H5Dset_extent(d, newdims));
    hid_t   fspace  = H5Dget_space(d);
    hsize_t t_start[2] = {40, 0}, t_count[2] = {8, 30};
    double  tail[8][30];
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 30; j++)
            tail[i][j] = 1000.0 + i * 30 + j;
    CHECK(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, t_start, NULL, t_count, NULL));
    hid_t tspace = H5Screate_simple(2, t_count, NULL);
    CHECK(H5Dwrite(d, H5T_NATIVE_DOUBLE, tspace, fspace, H5P_DEFAULT, tail));

    /* read back: everything, then the points */
    int all[48][30];
    CHECK(H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, all));
    EXPECT(all[0][0] == 11 && all[39][29] == 22 && all[20][1] == 33 && all[7][13] == 44);
    EXPECT(all[1][0] == -1);                 /* fill value */
    EXPECT(all[4][2] == 0 && all[4][3] == 1 && all[4][7] == 2 && all[35][23] == 3109 && all[35][24] == -1);
    EXPECT(all[40][0] == 1000 && all[47][29] == 1000 + 7 * 30 + 29);
    int back[4];
    hsize_t n4 = 4;
    hid_t   bspace = H5Screate_simple(1, &n4, NULL);
    CHECK(H5Sselect_elements(fspace, H5S_SELECT_SET, 4, (const hsize_t *)coords));
    CHECK(H5Dread(d, H5T_NATIVE_INT, bspace, fspace, H5P_DEFAULT, back));
    EXPECT(back[0] == 11 && back[1] == 22 && back[2] == 33 && back[3] == 44);

    /* attributes: scalar, array, fixed string */
    hid_t  s0 = H5Screate(H5S_SCALAR);
    hid_t  a  = H5Acreate2(d, "gain", H5T_IEEE_F64LE, s0, H5P_DEFAULT, H5P_DEFAULT);
    double gain = 2.5;
    CHECK(H5Awrite(a, H5T_NATIVE_DOUBLE, &gain));
    CHECK(H5Aclose(a));
    hsize_t three = 3;
    hid_t   s3    = H5Screate_simple(1, &three, NULL);
    a             = H5Acreate2(g, "offsets", H5T_STD_I16LE, s3, H5P_DEFAULT, H5P_DEFAULT);
    short offs[3] = {-1, 0, 7};
    CHECK(H5Awrite(a, H5T_NATIVE_SHORT, offs));
    CHECK(H5Aclose(a));
    hid_t str = H5Tcopy(H5T_C_S1);
    CHECK(H5Tset_size(str, 8));
    a = H5Acreate2(f, "instrument", str, s0, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(H5Awrite(a, str, "lidar\0\0\0"));
    CHECK(H5Aclose(a));
    EXPECT(H5Aexists(d, "gain") > 0 && H5Aexists(d, "nope") == 0);
    a = H5Aopen(g, "offsets", H5P_DEFAULT);
    short offs_back[3];
    CHECK(H5Aread(a, H5T_NATIVE_SHORT, offs_back));
    EXPECT(offs_back[0] == -1 && offs_back[2] == 7);
    CHECK(H5Aclose(a));

    /* a compound dataset */
    hid_t tag = H5Tcopy(H5T_C_S1);
    CHECK(H5Tset_size(tag, 4));
    hid_t rec = H5Tcreate(H5T_COMPOUND, sizeof(record_t));
    CHECK(H5Tinsert(rec, "id", HOFFSET(record_t, id), H5T_NATIVE_INT));
    CHECK(H5Tinsert(rec, "value", HOFFSET(record_t, value), H5T_NATIVE_DOUBLE));
    CHECK(H5Tinsert(rec, "tag", HOFFSET(record_t, tag), tag));
    record_t recs[3] = {{1, 0.5, "abc"}, {2, 1.5, "de"}, {3, -2.0, "f"}};
    hid_t    cd      = H5Dcreate2(f, "table", rec, s3, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(cd);
    CHECK(H5Dwrite(cd, rec, H5S_ALL, H5S_ALL, H5P_DEFAULT, recs));
    record_t rback[3];
    CHECK(H5Dread(cd, rec, H5S_ALL, H5S_ALL, H5P_DEFAULT, rback));
    EXPECT(rback[1].id == 2 && rback[2].value == -2.0 && strcmp(rback[0].tag, "abc") == 0);

    /* links */
    CHECK(H5Lcreate_soft("/run/frames/raw", f, "latest", H5P_DEFAULT, H5P_DEFAULT));
    CHECK(H5Lcreate_hard(f, "/table", g, "table_again", H5P_DEFAULT, H5P_DEFAULT));
    EXPECT(H5Lexists(f, "latest", H5P_DEFAULT) > 0);
    hid_t via = H5Dopen2(f, "latest", H5P_DEFAULT);
    CHECK(via);
    int first;
    hsize_t one = 1, z[2] = {0, 0}, c11[2] = {1, 1};
    hid_t   vspace = H5Dget_space(via), ospace = H5Screate_simple(1, &one, NULL);
    CHECK(H5Sselect_hyperslab(vspace, H5S_SELECT_SET, z, NULL, c11, NULL));
    CHECK(H5Dread(via, H5T_NATIVE_INT, ospace, vspace, H5P_DEFAULT, &first));
    EXPECT(first == 11);
    char names[256] = "";
    CHECK(H5Literate2(g, H5_INDEX_NAME, H5_ITER_INC, NULL, count_link, names));
    EXPECT(n_links == 2 && strcmp(names, "raw,table_again,") == 0);

    H5Sclose(vspace); H5Sclose(ospace); H5Dclose(via);
    H5Tclose(rec); H5Tclose(tag); H5Tclose(str);
    H5Sclose(s0); H5Sclose(s3); H5Sclose(bspace); H5Sclose(tspace); H5Sclose(fspace);
    H5Sclose(pspace); H5Sclose(mspace); H5Sclose(space);
    H5Pclose(dcpl); H5Pclose(lcpl);
    H5Dclose(cd); H5Dclose(d); H5Gclose(g);
    CHECK(H5Fclose(f));
    printf("roundtrip: ok\n");
    return 0;
}
