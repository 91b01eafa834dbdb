// Boost.Test module definition for test_apps (all tests/apps/*.cpp link into it).
#define BOOST_TEST_MODULE apps
#include <boost/test/unit_test.hpp>
