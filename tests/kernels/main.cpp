#define BOOST_TEST_MODULE kernels
#include <boost/test/unit_test.hpp>
