// Boost.Test module definition for test_messages (all tests/messages/*.cpp link into it).
#define BOOST_TEST_MODULE messages
#include <boost/test/unit_test.hpp>
