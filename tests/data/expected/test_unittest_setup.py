"""A unittest case whose expected list is set in setUp."""

import unittest


def ordered(values):
    return sorted(values)


class OrderTest(unittest.TestCase):
    def setUp(self):
        self.values = [3, 1, 2]
        self.expected = [1, 2, 4]

    def test_order(self):
        result = ordered(self.values)
        self.assertEqual(result, self.expected)


if __name__ == "__main__":
    unittest.main()
