Page({});
