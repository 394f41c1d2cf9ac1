/* What the connector needs from HDF5 2.0.0: the public API and the VOL
 * connector (developer) headers. */
#include "hdf5.h"
#include "H5VLconnector.h"
#include "H5PLextern.h"
#include "H5Tdevelop.h"
#include "H5Idevelop.h"
